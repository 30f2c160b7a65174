//! Work spread over the cores, its results in the order of its inputs: the phases of the
//! analysis that go dump by dump, group by group or rank by rank are independent per item, so
//! each item's result is the same on any number of threads and the output does not depend on
//! which thread computed what.

use std::sync::atomic::{AtomicUsize, Ordering};

/// `f(i)` for every `i` in `0..n`, in that order, computed on every core: each thread takes
/// the next run of indices not yet taken (items differ in cost: a group of 4,096 members next
/// to groups of two), and the runs are put back in order.
pub fn map<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let workers = std::thread::available_parallelism()
        .map_or(1, |p| p.get())
        .min(n);
    if workers <= 1 {
        return (0..n).map(f).collect();
    }
    // runs small enough to even the threads out, large enough that taking one costs nothing
    let run = (n / (workers * 32)).max(1);
    let next = AtomicUsize::new(0);
    let (f, next) = (&f, &next);
    let mut runs: Vec<(usize, Vec<T>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(move || {
                    let mut mine = Vec::new();
                    loop {
                        let start = next.fetch_add(run, Ordering::Relaxed);
                        if start >= n {
                            break mine;
                        }
                        let end = (start + run).min(n);
                        mine.push((start, (start..end).map(f).collect::<Vec<T>>()));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    runs.sort_unstable_by_key(|(start, _)| *start);
    let mut out = Vec::with_capacity(n);
    for (_, v) in runs {
        out.extend(v);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_come_in_input_order() {
        for n in [0, 1, 2, 7, 1000, 4097] {
            let v = super::map(n, |i| i * 3);
            assert_eq!(v, (0..n).map(|i| i * 3).collect::<Vec<_>>(), "n = {n}");
        }
    }
}
