//! Shared arithmetic of the schedules: logarithms, and the fold of a non-power-of-two group
//! onto a power of two (MPICH's scheme for recursive doubling and halving).
//!
//! With p = p' + rem (p' the largest power of two <= p), the first 2*rem ranks pair up: before
//! the main phase each odd rank 2i+1 hands its data to the even rank 2i (fold-in), sits the main
//! phase out, and gets its part of the result back afterwards (fold-out). The p' remaining ranks
//! take virtual ranks 0..p': even rank 2i < 2*rem is virtual rank i, rank j >= 2*rem is
//! virtual rank j - rem. The map is monotone, so a run of virtual ranks `[v, w)` stands for the
//! run of real ranks `[real(v), real(w))`, and a block set of real ranks stays contiguous.

/// ceil(lg p), with 0 for p <= 1.
pub fn ceil_log2(p: u32) -> u32 {
    if p <= 1 {
        0
    } else {
        32 - (p - 1).leading_zeros()
    }
}

/// How `p` ranks fold onto a power of two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fold {
    /// The largest power of two <= p.
    pub pof2: u32,
    /// p - pof2: the number of (even, odd) pairs that fold.
    pub rem: u32,
    /// lg pof2: the number of rounds of the main phase.
    pub rounds: u32,
}

/// What a rank does in the fold-in and fold-out steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Takes part in the main phase as this virtual rank, with no partner.
    Alone(u32),
    /// Takes part as this virtual rank on behalf of itself and its odd partner `me + 1`.
    Even(u32),
    /// Hands its data to `me - 1` and waits for the result.
    Odd,
}

impl Fold {
    pub fn new(p: u32) -> Fold {
        let p = p.max(1);
        let rounds = 31 - p.leading_zeros();
        let pof2 = 1 << rounds;
        Fold {
            pof2,
            rem: p - pof2,
            rounds,
        }
    }

    /// Steps spent folding in (and again folding out): 1 when p is not a power of two.
    pub fn fold_steps(&self) -> u32 {
        u32::from(self.rem > 0)
    }

    pub fn role(&self, me: u32) -> Role {
        if me < 2 * self.rem {
            if me.is_multiple_of(2) {
                Role::Even(me / 2)
            } else {
                Role::Odd
            }
        } else {
            Role::Alone(me - self.rem)
        }
    }

    /// The real rank of virtual rank `v`; `real(pof2)` is p, so `[real(v), real(w))` is the
    /// run of real ranks that virtual ranks `[v, w)` stand for.
    pub fn real(&self, v: u32) -> u32 {
        if v < self.rem {
            2 * v
        } else {
            v + self.rem
        }
    }
}

/// The phase a step of a folded schedule belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    FoldIn,
    /// Step of the main phase, counted from 0.
    Main(u32),
    FoldOut,
}

impl Fold {
    /// Total steps of a folded schedule whose main phase has `main` steps.
    pub fn steps(&self, main: u32) -> u32 {
        main + 2 * self.fold_steps()
    }

    /// Which phase `step` of a folded schedule with `main` main steps is in.
    pub fn phase(&self, step: u32, main: u32) -> Phase {
        let f = self.fold_steps();
        if step < f {
            Phase::FoldIn
        } else if step < f + main {
            Phase::Main(step - f)
        } else {
            Phase::FoldOut
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logarithms() {
        let got: Vec<u32> = (0..10).map(ceil_log2).collect();
        assert_eq!(got, [0, 0, 1, 2, 2, 3, 3, 3, 3, 4]);
    }

    #[test]
    fn virtual_ranks_cover_the_real_ones_in_order() {
        for p in 1..=40 {
            let f = Fold::new(p);
            assert!(f.pof2 <= p && p < 2 * f.pof2);
            assert_eq!(f.real(0), 0);
            assert_eq!(f.real(f.pof2), p);
            let mut seen = vec![false; p as usize];
            for me in 0..p {
                match f.role(me) {
                    Role::Alone(v) => assert_eq!(f.real(v), me),
                    Role::Even(v) => {
                        assert_eq!(f.real(v), me);
                        assert_eq!(f.real(v + 1), me + 2);
                    }
                    Role::Odd => assert_eq!(f.role(me - 1), Role::Even((me - 1) / 2)),
                }
                if let Role::Alone(v) | Role::Even(v) = f.role(me) {
                    assert!(!seen[v as usize]);
                    seen[v as usize] = true;
                }
            }
            assert_eq!(seen.iter().filter(|s| **s).count(), f.pof2 as usize);
        }
    }
}
