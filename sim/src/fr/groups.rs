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
use std::sync::Arc;

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
/// The world is `world` ranks where the user states it, else the largest any dump shows.
pub fn infer(dumps: &[Dump], world: Option<u32>) -> Groups {
    let mut notes = Vec::new();
    let mut world = world
        .unwrap_or(0)
        .max(dumps.iter().map(|d| d.rank + 1).max().unwrap_or(0));
    let usable = usable_configs(dumps, &mut world, &mut notes);
    let configs = Configs::new(&usable);
    let mut named_ranks = BTreeMap::new();
    let per_dump_keys: Vec<BTreeMap<(u32, u32), Key>> = (dumps.iter().zip(&usable))
        .map(|(d, m)| record_keys(d, m, &configs, &mut named_ranks))
        .collect();
    let all: BTreeSet<Key> = per_dump_keys
        .iter()
        .flat_map(|keys| keys.values().cloned())
        .collect();
    let keys_sorted: Vec<Key> = all.into_iter().collect();
    let unsorted: Vec<Group> = (keys_sorted.iter())
        .map(|k| k.group(&configs, &named_ranks, world))
        .collect();
    let (list, new_index) = numbered(unsorted, world);
    notes.extend(record_notes(&list));
    let of_dump_group = (dumps.iter().zip(&per_dump_keys))
        .map(|(d, keys)| {
            (d.groups.iter())
                .map(|k| {
                    keys.get(k).map_or(0, |key| {
                        new_index[keys_sorted.binary_search(key).unwrap_or(0)]
                    })
                })
                .collect()
        })
        .collect();
    Groups {
        list,
        world_size: world,
        of_dump_group,
        notes,
    }
}

/// A group's members as `pg_config` lists them, sorted. The dumps of a job list the same
/// groups and share their lists, and [`usable_configs`] makes equal lists one: two lists
/// compare without being read when they are one.
#[derive(Clone, Debug)]
struct Members(Arc<[u32]>);

impl PartialEq for Members {
    fn eq(&self, other: &Members) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }
}

impl Eq for Members {}

impl Ord for Members {
    fn cmp(&self, other: &Members) -> std::cmp::Ordering {
        if Arc::ptr_eq(&self.0, &other.0) {
            std::cmp::Ordering::Equal
        } else {
            self.0.cmp(&other.0)
        }
    }
}

impl PartialOrd for Members {
    fn partial_cmp(&self, other: &Members) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// A dump's usable `pg_config` entries: name -> (sorted members, description).
type Usable<'a> = BTreeMap<&'a str, (Members, &'a str)>;

/// The usable `pg_config` entries of each dump (name -> (sorted members, description)),
/// raising `world` to what their rank lists show and noting the dumps whose table is unusable.
fn usable_configs<'a>(
    dumps: &'a [Dump],
    world: &mut u32,
    notes: &mut Vec<String>,
) -> Vec<Usable<'a>> {
    let mut usable = Vec::with_capacity(dumps.len());
    let mut unusable_ranks = Vec::new();
    // each list the dumps share is read once (by its address), its members sorted (None: a
    // rank beyond any world), and equal lists made one
    let mut read: BTreeMap<usize, Option<Members>> = BTreeMap::new();
    let mut distinct: BTreeSet<Members> = BTreeSet::new();
    for d in dumps {
        let mut m = BTreeMap::new();
        let mut bad = false;
        for c in &d.pg_config {
            let Some(ranks) = &c.ranks else {
                bad = true;
                continue;
            };
            let members = read
                .entry(Arc::as_ptr(ranks) as *const u32 as usize)
                .or_insert_with(|| sorted_members(ranks, &mut distinct));
            let Some(r) = members.clone() else {
                bad = true;
                continue;
            };
            // the length of any rank list bounds the world from below, even gloo's
            *world = (*world).max(ranks.len() as u32);
            if c.name.is_empty() || r.0.binary_search(&d.rank).is_err() {
                bad = true;
                continue;
            }
            if let Some(&mx) = r.0.last() {
                *world = (*world).max(mx + 1);
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
    usable
}

/// A `pg_config` rank list sorted, or None when a rank lies beyond any world; the one of
/// `distinct` equal to it, if any (a list in order is shared as it is).
fn sorted_members(ranks: &Arc<[u32]>, distinct: &mut BTreeSet<Members>) -> Option<Members> {
    if !ranks.iter().all(|&x| x < MAX_WORLD) {
        return None;
    }
    let r = if ranks.windows(2).all(|w| w[0] < w[1]) {
        Members(Arc::clone(ranks))
    } else {
        let mut r = ranks.to_vec();
        r.sort_unstable();
        r.dedup();
        Members(r.into())
    };
    if let Some(same) = distinct.get(&r) {
        return Some(same.clone());
    }
    distinct.insert(r.clone());
    Some(r)
}

/// The groups every dump's `pg_config` names: their descriptions by (name, members), and the
/// member sets of each name.
struct Configs {
    desc: BTreeMap<(String, Members), String>,
    by_name: BTreeMap<String, Vec<Members>>,
}

impl Configs {
    fn new(usable: &[Usable]) -> Configs {
        let mut desc: BTreeMap<(String, Members), String> = BTreeMap::new();
        for m in usable {
            for (name, (members, d)) in m {
                desc.entry((name.to_string(), members.clone()))
                    .or_insert_with(|| d.to_string());
            }
        }
        let mut by_name: BTreeMap<String, Vec<Members>> = BTreeMap::new();
        for (name, members) in desc.keys() {
            by_name
                .entry(name.clone())
                .or_default()
                .push(members.clone());
        }
        Configs { desc, by_name }
    }
}

/// What a record's group resolves to.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    /// A `pg_config` entry: name, members.
    Config(String, Members),
    /// The default group: name, description.
    World(String, String),
    /// A group only records name: name, description (members: the ranks whose records do).
    Named(String, String),
}

impl Key {
    fn group(
        &self,
        configs: &Configs,
        named_ranks: &BTreeMap<(String, String), BTreeSet<u32>>,
        world: u32,
    ) -> Group {
        let (name, desc, members, from) = match self {
            Key::Config(name, members) => (
                name,
                (configs.desc.get(&(name.clone(), members.clone())))
                    .cloned()
                    .unwrap_or_default(),
                members.0.to_vec(),
                MembersFrom::PgConfig,
            ),
            Key::World(name, desc) => {
                (name, desc.clone(), (0..world).collect(), MembersFrom::World)
            }
            Key::Named(name, desc) => (
                name,
                desc.clone(),
                (named_ranks.get(&(name.clone(), desc.clone())))
                    .map(|s| s.iter().copied().collect())
                    .unwrap_or_default(),
                MembersFrom::Records,
            ),
        };
        Group {
            id: 0,
            name: name.clone(),
            desc,
            members,
            from,
        }
    }
}

/// The key of each group dump `d`'s records name (by their name and description string ids),
/// given its usable `pg_config` entries `m`; ranks naming a group no table lists are added to
/// `named_ranks`.
fn record_keys(
    d: &Dump,
    m: &Usable,
    configs: &Configs,
    named_ranks: &mut BTreeMap<(String, String), BTreeSet<u32>>,
) -> BTreeMap<(u32, u32), Key> {
    let mut keys = BTreeMap::new();
    for &(group_name, group_desc) in &d.groups {
        let name = d.str(group_name);
        let desc = d.str(group_desc);
        let key = if let Some((members, _)) = m.get(name) {
            Key::Config(name.to_string(), members.clone())
        } else {
            // another dump's table names it with this rank as a member (members are sorted)
            let cands: Vec<&Members> = (configs.by_name.get(name).into_iter().flatten())
                .filter(|mem| mem.0.binary_search(&d.rank).is_ok())
                .collect();
            if let [members] = cands[..] {
                Key::Config(name.to_string(), members.clone())
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
    keys
}

/// The groups numbered, the world first, then by smallest member and name, and the new number
/// of each group of `list`.
fn numbered(list: Vec<Group>, world: u32) -> (Vec<Group>, Vec<u32>) {
    let order = |g: &Group| {
        (
            g.members.len() as u32 != world,
            g.members.first().copied().unwrap_or(0),
        )
    };
    let mut keyed: Vec<(usize, Group)> = list.into_iter().enumerate().collect();
    keyed.sort_by(|(_, ga), (_, gb)| {
        (order(ga), &ga.name, &ga.members).cmp(&(order(gb), &gb.name, &gb.members))
    });
    let mut new_index = vec![0u32; keyed.len()];
    let sorted = (keyed.into_iter().enumerate())
        .map(|(new, (old, mut g))| {
            new_index[old] = new as u32;
            g.id = new as u32;
            g
        })
        .collect();
    (sorted, new_index)
}

/// A note per group whose members are read from records, up to a screen of them.
fn record_notes(list: &[Group]) -> Vec<String> {
    const MAX_NOTES: usize = 8;
    let from_records: Vec<&Group> = list
        .iter()
        .filter(|g| g.from == MembersFrom::Records)
        .collect();
    let mut notes: Vec<String> = (from_records.iter().take(MAX_NOTES))
        .map(|g| {
            format!(
                "members of {} are the ranks whose records name it: {} (a member whose window \
                 holds none of its calls, or that left no dump, would not show)",
                g.label(),
                crate::diagnose::fmt_ranks(&g.members)
            )
        })
        .collect();
    if from_records.len() > MAX_NOTES {
        notes.push(format!(
            "and so are the members of {} more groups (`groups` in --json lists them)",
            from_records.len() - MAX_NOTES
        ));
    }
    notes
}
