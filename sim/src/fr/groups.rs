//! Process groups: who the members of each group are.
//!
//! A group is its name *and* its member set: the same name may denote different groups on
//! different ranks (names are per-process counters unless hashed). Members come from the
//! dumping rank's `pg_config` when that entry is usable — it names the group and lists the rank
//! itself. gloo writes an unusable one (a single entry `""` with group-local ranks), and some
//! dumps have none: then a group's members are the ranks whose records name it, and the default
//! group (`default_pg`) is the whole world. The world's size is the largest rank any dump or
//! `pg_config` shows, so a rank without a dump is still known to exist.

use super::model::Dump;
use std::collections::{BTreeMap, BTreeSet};

/// Where a group's members were read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MembersFrom {
    /// `pg_config` of its members' dumps.
    PgConfig,
    /// The default group: every rank of the world.
    World,
    /// The ranks whose records name the group (`pg_config` unusable or absent).
    Records,
}

/// One process group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// Its number in reports: the world is 0 when it is a group of the job.
    pub id: u32,
    pub name: String,
    pub desc: String,
    /// Global ranks, sorted.
    pub members: Vec<u32>,
    pub from: MembersFrom,
}

impl Group {
    /// `group 0 (default_pg)`, its name and description [`safe`](crate::text::safe) to show.
    pub fn label(&self) -> String {
        use crate::text::safe;
        if self.desc.is_empty() || self.desc == self.name {
            format!("group {}", safe(&self.name))
        } else {
            format!("group {} ({})", safe(&self.name), safe(&self.desc))
        }
    }

    /// The group rank of global rank `r`.
    pub fn local(&self, r: u32) -> Option<u32> {
        self.members.binary_search(&r).ok().map(|i| i as u32)
    }
}

/// Every group of the job, and the group of every record.
#[derive(Clone, Debug, Default)]
pub struct Groups {
    pub list: Vec<Group>,
    pub world_size: u32,
    /// For each dump (in the order given), the group of each entry of its `groups`.
    pub of_dump_group: Vec<Vec<u32>>,
    /// Sentences about what was inferred.
    pub notes: Vec<String>,
}

/// At most this many ranks in a world, as in a scenario: larger `pg_config` rank lists are
/// not believed, and a file name with a larger rank is refused.
pub const MAX_WORLD: u32 = crate::scenario::MAX_WORLD_SIZE;

fn is_default(name: &str, desc: &str) -> bool {
    desc == "default_pg" || (desc.is_empty() && name == "0")
}

/// Works out the groups of `dumps` (sorted by rank), in time linear in the groups and
/// members named (up to logarithms): a dump's `pg_config` may list a hundred thousand groups.
pub fn infer(dumps: &[Dump]) -> Groups {
    let mut notes = Vec::new();
    // usable pg_config entries per dump: name -> (members, description)
    let mut usable: Vec<BTreeMap<&str, (Vec<u32>, &str)>> = Vec::with_capacity(dumps.len());
    let mut world = dumps.iter().map(|d| d.rank + 1).max().unwrap_or(0);
    let mut unusable_ranks = Vec::new();
    for d in dumps {
        let mut m = BTreeMap::new();
        let mut bad = false;
        for c in &d.pg_config {
            let Some(ranks) = c
                .ranks
                .as_ref()
                .filter(|r| r.iter().all(|&x| x < MAX_WORLD))
            else {
                bad = true;
                continue;
            };
            // the length of any rank list bounds the world from below, even gloo's
            world = world.max(ranks.len() as u32);
            if c.name.is_empty() || !ranks.contains(&d.rank) {
                bad = true;
                continue;
            }
            let mut r = ranks.clone();
            r.sort_unstable();
            r.dedup();
            if let Some(&mx) = r.last() {
                world = world.max(mx + 1);
            }
            m.insert(c.name.as_str(), (r, c.desc.as_str()));
        }
        // entries naming a group the table does not list make the table suspect too
        if bad {
            unusable_ranks.push(d.rank);
        }
        usable.push(m);
    }
    if !unusable_ranks.is_empty() {
        notes.push(format!(
            "pg_config is unusable in the dumps of {} (gloo writes a single entry with \
             group-local ranks): members are inferred from the records",
            crate::diagnose::ranks_phrase(&unusable_ranks)
        ));
    }
    // groups known from pg_config: (name, members)
    let mut keyed: BTreeMap<(String, Vec<u32>), String> = BTreeMap::new();
    for m in &usable {
        for (name, (members, desc)) in m {
            keyed
                .entry((name.to_string(), members.clone()))
                .or_insert_with(|| desc.to_string());
        }
    }
    // the same, by name: the member sets each name has
    let mut by_name: BTreeMap<&str, Vec<&(String, Vec<u32>)>> = BTreeMap::new();
    for k in keyed.keys() {
        by_name.entry(k.0.as_str()).or_default().push(k);
    }
    // records: (name, desc) per dump, resolved to a group key
    #[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
    enum Key {
        Config(String, Vec<u32>),
        World(String, String),
        Named(String, String),
    }
    let mut per_dump_keys: Vec<BTreeMap<(u32, u32), Key>> = Vec::with_capacity(dumps.len());
    let mut named_ranks: BTreeMap<(String, String), BTreeSet<u32>> = BTreeMap::new();
    for (d, m) in dumps.iter().zip(&usable) {
        let mut keys: BTreeMap<(u32, u32), Key> = BTreeMap::new();
        for &(group_name, group_desc) in &d.groups {
            let name = d.str(group_name);
            let desc = d.str(group_desc);
            let key = if let Some((members, _)) = m.get(name) {
                Key::Config(name.to_string(), members.clone())
            } else {
                // (members are sorted)
                let cands: Vec<&(String, Vec<u32>)> = by_name
                    .get(name)
                    .into_iter()
                    .flatten()
                    .copied()
                    .filter(|(_, mem)| mem.binary_search(&d.rank).is_ok())
                    .collect();
                if cands.len() == 1 {
                    Key::Config(cands[0].0.clone(), cands[0].1.clone())
                } else if is_default(name, desc) {
                    Key::World(name.to_string(), desc.to_string())
                } else {
                    named_ranks
                        .entry((name.to_string(), desc.to_string()))
                        .or_default()
                        .insert(d.rank);
                    Key::Named(name.to_string(), desc.to_string())
                }
            };
            keys.insert((group_name, group_desc), key);
        }
        per_dump_keys.push(keys);
    }
    // number the groups: the world first, then by smallest member and name
    let mut all: BTreeSet<Key> = BTreeSet::new();
    for keys in &per_dump_keys {
        all.extend(keys.values().cloned());
    }
    let mut list: Vec<Group> = all
        .iter()
        .map(|k| match k {
            Key::Config(name, members) => Group {
                id: 0,
                name: name.clone(),
                desc: keyed
                    .get(&(name.clone(), members.clone()))
                    .cloned()
                    .unwrap_or_default(),
                members: members.clone(),
                from: MembersFrom::PgConfig,
            },
            Key::World(name, desc) => Group {
                id: 0,
                name: name.clone(),
                desc: desc.clone(),
                members: (0..world).collect(),
                from: MembersFrom::World,
            },
            Key::Named(name, desc) => Group {
                id: 0,
                name: name.clone(),
                desc: desc.clone(),
                members: named_ranks
                    .get(&(name.clone(), desc.clone()))
                    .map(|s| s.iter().copied().collect())
                    .unwrap_or_default(),
                from: MembersFrom::Records,
            },
        })
        .collect();
    let order = |g: &Group| {
        (
            g.members.len() as u32 != world,
            g.members.first().copied().unwrap_or(0),
        )
    };
    let mut idx: Vec<usize> = (0..list.len()).collect();
    // compared in place: a key of copies would copy every member list at each comparison
    idx.sort_by(|&a, &b| {
        let (ga, gb) = (&list[a], &list[b]);
        (order(ga), &ga.name, &ga.members).cmp(&(order(gb), &gb.name, &gb.members))
    });
    let keys_sorted: Vec<Key> = all.into_iter().collect();
    let mut new_index = vec![0u32; list.len()];
    for (new, &old) in idx.iter().enumerate() {
        new_index[old] = new as u32;
    }
    let mut sorted: Vec<Group> = idx.iter().map(|&i| list[i].clone()).collect();
    for (i, g) in sorted.iter_mut().enumerate() {
        g.id = i as u32;
    }
    list = sorted;
    // a note per such group, up to a screen of them
    const MAX_NOTES: usize = 8;
    let from_records: Vec<&Group> = list
        .iter()
        .filter(|g| g.from == MembersFrom::Records)
        .collect();
    for g in from_records.iter().take(MAX_NOTES) {
        notes.push(format!(
            "members of {} are the ranks whose records name it: {} (a member whose window holds \
             none of its calls, or that left no dump, would not show)",
            g.label(),
            crate::diagnose::fmt_ranks(&g.members)
        ));
    }
    if from_records.len() > MAX_NOTES {
        notes.push(format!(
            "and so are the members of {} more groups (`groups` in --json lists them)",
            from_records.len() - MAX_NOTES
        ));
    }
    let mut of_dump_group = Vec::with_capacity(dumps.len());
    for (d, keys) in dumps.iter().zip(&per_dump_keys) {
        let v: Vec<u32> = d
            .groups
            .iter()
            .map(|k| {
                keys.get(k).map_or(0, |key| {
                    new_index[keys_sorted.binary_search(key).unwrap_or(0)]
                })
            })
            .collect();
        of_dump_group.push(v);
    }
    Groups {
        list,
        world_size: world,
        of_dump_group,
        notes,
    }
}
