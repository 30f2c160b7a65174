//! Device meshes, as PyTorch's `DeviceMesh`: the world's ranks laid out row-major in an array of
//! `shape`, one named dimension per axis. The sub-group along dimension d of a rank holds the
//! ranks that differ from it only in coordinate d, in order of that coordinate (which is the
//! rank's index in the sub-group). An op with `group = "tp"` runs on every tp sub-group at once,
//! each with its own sequence numbers.
//!
//! Group ids: 0 is the world. Dimension d has world / shape[d] sub-groups, numbered after those
//! of the dimensions before it, in order of their first (smallest) rank: the j-th sub-group along
//! d has id `1 + sum over e < d of world / shape[e] + j`. With shape [2, 4] and dims
//! ["dp", "tp"]: the dp sub-groups {0,4} {1,5} {2,6} {3,7} are groups 1 to 4, and the tp
//! sub-groups {0,1,2,3} {4,5,6,7} are groups 5 and 6.

use super::types::{GroupId, Rank};
use crate::vocab::Mesh;

/// A mesh over a world of a given size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MeshLayout {
    shape: Vec<u32>,
    dims: Vec<String>,
    world: u32,
}

impl MeshLayout {
    /// The layout of `mesh` over `world` ranks; None unless the shape covers the world exactly
    /// and names each dimension (validated scenarios always do).
    pub fn new(mesh: &Mesh, world: u32) -> Option<MeshLayout> {
        let product = mesh
            .shape
            .iter()
            .try_fold(1u32, |acc, &n| acc.checked_mul(n))?;
        let fits = !mesh.shape.is_empty()
            && mesh.shape.len() == mesh.dims.len()
            && !mesh.shape.contains(&0)
            && product == world;
        fits.then(|| MeshLayout {
            shape: mesh.shape.clone(),
            dims: mesh.dims.clone(),
            world,
        })
    }

    /// The index of the dimension called `name`.
    pub fn dim(&self, name: &str) -> Option<usize> {
        self.dims.iter().position(|d| d == name)
    }

    pub fn dims(&self) -> usize {
        self.dims.len()
    }

    /// Distance between neighbours along dimension d (row-major).
    fn stride(&self, d: usize) -> u32 {
        self.shape[d + 1..].iter().product()
    }

    /// Id of the first sub-group along dimension d.
    fn base(&self, d: usize) -> u32 {
        1 + self.shape[..d].iter().map(|&s| self.world / s).sum::<u32>()
    }

    /// The sub-group along dimension `d` that `rank` belongs to: its id and members in order.
    pub fn group_of(&self, d: usize, rank: Rank) -> (GroupId, Vec<Rank>) {
        let (stride, size) = (self.stride(d), self.shape[d]);
        let first = rank.0 - (rank.0 / stride % size) * stride;
        let j = first / (stride * size) * stride + first % stride;
        (GroupId(self.base(d) + j), self.span(first, d))
    }

    /// The members of sub-group `id`, if it is one of this mesh's.
    pub fn members(&self, id: GroupId) -> Option<Vec<Rank>> {
        (0..self.dims()).find_map(|d| {
            let (base, count) = (self.base(d), self.world / self.shape[d]);
            let j = id.0.checked_sub(base).filter(|&j| j < count)?;
            let (stride, size) = (self.stride(d), self.shape[d]);
            let first = j / stride * stride * size + j % stride;
            Some(self.span(first, d))
        })
    }

    fn span(&self, first: u32, d: usize) -> Vec<Rank> {
        let stride = self.stride(d);
        (0..self.shape[d])
            .map(|c| Rank(first + c * stride))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(shape: &[u32], dims: &[&str]) -> MeshLayout {
        let mesh = Mesh {
            shape: shape.to_vec(),
            dims: dims.iter().map(|d| d.to_string()).collect(),
        };
        MeshLayout::new(&mesh, shape.iter().product()).expect("fits")
    }

    /// Row-major coordinates of rank `r`.
    fn coords(shape: &[u32], mut r: u32) -> Vec<u32> {
        let mut c = vec![0; shape.len()];
        for d in (0..shape.len()).rev() {
            c[d] = r % shape[d];
            r /= shape[d];
        }
        c
    }

    fn ids(v: &[u32]) -> Vec<Rank> {
        v.iter().map(|&r| Rank(r)).collect()
    }

    #[test]
    fn a_2x4_mesh_has_dp_columns_and_tp_rows() {
        let m = layout(&[2, 4], &["dp", "tp"]);
        assert_eq!(m.dim("tp"), Some(1));
        assert_eq!(m.group_of(0, Rank(5)), (GroupId(2), ids(&[1, 5])));
        assert_eq!(m.group_of(1, Rank(5)), (GroupId(6), ids(&[4, 5, 6, 7])));
        assert_eq!(m.group_of(0, Rank(0)), (GroupId(1), ids(&[0, 4])));
        assert_eq!(m.group_of(1, Rank(3)), (GroupId(5), ids(&[0, 1, 2, 3])));
        assert_eq!(m.members(GroupId(4)), Some(ids(&[3, 7])));
        assert_eq!(m.members(GroupId(0)), None);
        assert_eq!(m.members(GroupId(7)), None);
    }

    #[test]
    fn every_rank_is_in_one_group_per_dimension_and_ids_are_distinct() {
        for shape in [&[3u32, 2, 4][..], &[1, 5], &[6], &[2, 2, 2, 2]] {
            let dims: Vec<String> = (0..shape.len()).map(|d| format!("d{d}")).collect();
            let dims: Vec<&str> = dims.iter().map(|s| s.as_str()).collect();
            let m = layout(shape, &dims);
            let world: u32 = shape.iter().product();
            let mut seen = Vec::new();
            for d in 0..shape.len() {
                for r in 0..world {
                    let (id, members) = m.group_of(d, Rank(r));
                    assert_eq!(members.len() as u32, shape[d]);
                    assert!(members.contains(&Rank(r)));
                    assert_eq!(
                        m.members(id).as_ref(),
                        Some(&members),
                        "{shape:?} d={d} r={r}"
                    );
                    // member c has coordinate d = c, and r's other coordinates
                    for (c, q) in members.iter().enumerate() {
                        let (mine, theirs) = (coords(shape, r), coords(shape, q.0));
                        assert_eq!(theirs[d], c as u32);
                        for e in (0..shape.len()).filter(|&e| e != d) {
                            assert_eq!(mine[e], theirs[e]);
                        }
                    }
                    if !seen.contains(&id) {
                        seen.push(id);
                    }
                }
            }
            let want: u32 = shape.iter().map(|&s| world / s).sum();
            assert_eq!(seen.len() as u32, want);
            assert!(seen.iter().all(|g| g.0 >= 1 && g.0 <= want));
        }
    }

    #[test]
    fn a_mesh_that_does_not_cover_the_world_has_no_layout() {
        let mesh = Mesh {
            shape: vec![2, 4],
            dims: vec!["dp".into(), "tp".into()],
        };
        assert!(MeshLayout::new(&mesh, 6).is_none());
        assert!(MeshLayout::new(&mesh, 8).is_some());
    }
}
