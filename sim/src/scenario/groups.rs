//! The groups an op can name: the world, a dimension of `[group.mesh]`, or a `[[groups]]`
//! entry. Each is a set of disjoint sub-groups; a member's rank in its sub-group is its place
//! in it (coordinate order for a mesh, list order for a named group).
//!
//! Group ids: 0 is the world; the mesh's sub-groups come next (see the protocol crate's `mesh`
//! module); then the sub-groups of each `[[groups]]` entry in the order written, each entry's
//! in list order.

use super::Scenario;
use ringside_proto::mesh::MeshLayout;
use ringside_proto::GroupId;

/// The sub-groups of the group called `name` (a mesh dimension or a `[[groups]]` entry), each
/// in group-rank order; None if no group has that name.
pub fn subgroups(s: &Scenario, name: &str) -> Option<Vec<Vec<u32>>> {
    if let Some(g) = s.groups.iter().find(|g| g.name == name) {
        return Some(g.ranks.subgroups().iter().map(|r| r.to_vec()).collect());
    }
    let mesh = s.group.mesh.as_ref()?;
    let layout = MeshLayout::new(mesh, s.world.size)?;
    let d = layout.dim(name)?;
    let mut seen = vec![false; s.world.size as usize];
    let mut out = Vec::new();
    for r in 0..s.world.size {
        if !seen[r as usize] {
            let (_, members) = layout.group_of(d, ringside_proto::Rank(r));
            for m in &members {
                seen[m.0 as usize] = true;
            }
            out.push(members.iter().map(|m| m.0).collect());
        }
    }
    Some(out)
}

/// The members of `rank`'s sub-group of the group called `name`, if it is in one.
pub fn subgroup_of(s: &Scenario, name: &str, rank: u32) -> Option<Vec<u32>> {
    subgroups(s, name)?.into_iter().find(|g| g.contains(&rank))
}

/// Whether `name` names a group (a mesh dimension or a `[[groups]]` entry).
pub fn exists(s: &Scenario, name: &str) -> bool {
    s.groups.iter().any(|g| g.name == name)
        || s.group
            .mesh
            .as_ref()
            .is_some_and(|m| m.dims.iter().any(|d| d == name))
}

/// The id of the first sub-group of the `[[groups]]` entries: after the world and the mesh's.
fn named_base(s: &Scenario) -> u32 {
    let mesh = s
        .group
        .mesh
        .as_ref()
        .filter(|m| MeshLayout::new(m, s.world.size).is_some());
    1 + mesh.map_or(0, |m| {
        m.shape.iter().map(|&n| s.world.size / n.max(1)).sum()
    })
}

/// Every sub-group of every `[[groups]]` entry, with its id: (id, entry index, members).
pub fn named_subgroups(s: &Scenario) -> Vec<(GroupId, usize, Vec<u32>)> {
    let mut id = named_base(s);
    let mut out = Vec::new();
    for (e, g) in s.groups.iter().enumerate() {
        for members in g.ranks.subgroups() {
            out.push((GroupId(id), e, members.to_vec()));
            id += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::parse;

    #[test]
    fn named_groups_are_numbered_after_the_mesh() {
        let s = parse(
            "name = \"g\"\n[world]\nsize = 8\n[group.mesh]\nshape = [2, 4]\ndims = [\"dp\", \"tp\"]\n\
             [[groups]]\nname = \"pp\"\nranks = [[0, 4], [1, 5], [2, 6], [3, 7]]\n\
             [[groups]]\nname = \"evens\"\nranks = [6, 0, 2, 4]\n[workload]\n",
            "g.toml",
        )
        .unwrap();
        // dp: 4 sub-groups (1..=4), tp: 2 (5, 6); pp: 7..=10; evens: 11
        let named = named_subgroups(&s);
        assert_eq!(named[1], (GroupId(8), 0, vec![1, 5]));
        assert_eq!(named[4], (GroupId(11), 1, vec![6, 0, 2, 4]));
        assert_eq!(named.len(), 5);
        assert_eq!(subgroup_of(&s, "tp", 6), Some(vec![4, 5, 6, 7]));
        assert_eq!(subgroup_of(&s, "dp", 6), Some(vec![2, 6]));
        assert_eq!(subgroups(&s, "pp").unwrap().len(), 4);
        assert!(exists(&s, "dp") && exists(&s, "evens") && !exists(&s, "world"));
    }
}
