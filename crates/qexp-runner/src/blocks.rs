//! The schedule of a run with deployments: which deployment is measured
//! when. Trials are blocks; an interleaved run visits every deployment once
//! per block in a seeded random order (randomized multiple interleaved
//! trials, Abedi & Brecht, ICPE'17), so drift over the run falls on every
//! deployment alike; a blocked run measures all blocks of one deployment
//! before the next, which confounds drift with the deployments.
//!
//! The random orders are counterbalanced: every D consecutive blocks (D
//! deployments) use the D rotations of one random order, themselves in a
//! random order — a randomized Latin square (Williams 1949 for the idea of
//! balancing positions). Each deployment then takes each place in the
//! block equally often (exactly so when the blocks are a multiple of D;
//! the last, partial square leaves some places one visit short), so drift
//! within a block cancels too, where plain
//! shuffles leave it to chance (two deployments, four blocks: one seed in
//! eight puts the same deployment first every time).

use qexp_plan::{Order, Plan, Point, Restart};
use qexp_store::ScheduleCell;
use rand::seq::SliceRandom;
use rand::{rngs::StdRng, SeedableRng};

/// Mixed into the run seed for the visiting order, so that it does not
/// follow the point shuffle's stream.
const ORDER_SALT: u64 = 0x6465_706c_6f79_6d65;

/// The (block, deployment) cells of a run in the order they are measured.
pub fn schedule(order: Order, blocks: u32, deployments: &[String], seed: u64) -> Vec<ScheduleCell> {
    let cell = |block: u32, d: &String| ScheduleCell {
        block,
        deployment: d.clone(),
    };
    match order {
        Order::Blocked => deployments
            .iter()
            .flat_map(|d| (1..=blocks).map(move |b| cell(b, d)))
            .collect(),
        Order::Interleaved => {
            let n = deployments.len().max(1);
            let mut rng = StdRng::seed_from_u64(seed ^ ORDER_SALT);
            let mut orders: Vec<Vec<&String>> = Vec::new();
            while orders.len() < blocks as usize {
                let mut base: Vec<&String> = deployments.iter().collect();
                base.shuffle(&mut rng);
                let mut square: Vec<Vec<&String>> = (0..n)
                    .map(|k| {
                        let mut row = base.clone();
                        row.rotate_left(k);
                        row
                    })
                    .collect();
                square.shuffle(&mut rng);
                orders.extend(square);
            }
            orders
                .into_iter()
                .take(blocks as usize)
                .zip(1..=blocks)
                .flat_map(|(visit, b)| visit.into_iter().map(move |d| cell(b, d)))
                .collect()
        }
    }
}

/// The points of `deployment` in the order one cell runs them: plan order,
/// or shuffled per block when the plan shuffles (the same shuffle for every
/// deployment of the block, so that they stay paired).
pub(crate) fn cell_points(
    points: &[Point],
    deployment: &str,
    block: u32,
    seed: u64,
    shuffle: bool,
) -> Vec<u32> {
    let mut ids: Vec<u32> = points
        .iter()
        .filter(|p| p.deployment.as_deref() == Some(deployment))
        .map(|p| p.id)
        .collect();
    if shuffle {
        let mut places: Vec<usize> = (0..ids.len()).collect();
        places.shuffle(&mut StdRng::seed_from_u64(seed ^ u64::from(block)));
        ids = places.into_iter().map(|i| ids[i]).collect();
    }
    ids
}

/// Server starts the schedule needs: one per cell of a launched deployment
/// under `per_block`, one per launched deployment under `once`.
pub fn starts(plan: &Plan, cells: &[ScheduleCell]) -> usize {
    let launched = |name: &str| {
        plan.deployments()
            .iter()
            .any(|d| d.name() == name && d.is_launched())
    };
    match plan.restart() {
        Restart::PerBlock => cells.iter().filter(|c| launched(&c.deployment)).count(),
        Restart::Once => plan
            .deployments()
            .iter()
            .filter(|d| d.is_launched())
            .count(),
    }
}

/// The schedule for people: one line per block, then the number of starts
/// (what `qexp run --dry-run` prints).
pub fn describe(plan: &Plan, blocks: u32) -> String {
    let names: Vec<String> = plan
        .deployments()
        .iter()
        .map(|d| d.name().to_string())
        .collect();
    let cells = schedule(plan.order(), blocks, &names, plan.file.run.seed);
    let points = plan.points().len();
    let per_cell = points / names.len().max(1);
    let mut out = format!(
        "{} deployments × {blocks} blocks, {} order, restart {}; each block measures {per_cell} \
         points on each deployment ({points} points in all)\n",
        names.len(),
        plan.order().as_str(),
        plan.restart().as_str()
    );
    for (i, c) in cells.iter().enumerate() {
        out.push_str(&format!(
            "  {:>3}. block {} → {}\n",
            i + 1,
            c.block,
            c.deployment
        ));
    }
    out.push_str(&format!("server starts: {}\n", starts(plan, &cells)));
    if plan.order() == Order::Blocked {
        out.push_str(
            "warning: blocked order measures each deployment at another time; drift over the run \
             will read as a difference between deployments\n",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("d{i}")).collect()
    }

    #[test]
    fn interleaved_blocks_visit_every_deployment_once() {
        let d = names(4);
        let cells = schedule(Order::Interleaved, 5, &d, 7);
        assert_eq!(cells.len(), 20);
        for b in 1..=5 {
            let mut seen: Vec<&str> = cells
                .iter()
                .filter(|c| c.block == b)
                .map(|c| c.deployment.as_str())
                .collect();
            seen.sort_unstable();
            assert_eq!(seen, ["d0", "d1", "d2", "d3"], "block {b}");
        }
        // Blocks come one after another.
        assert!(cells.windows(2).all(|w| w[0].block <= w[1].block));
    }

    #[test]
    fn the_seed_decides_the_order() {
        let d = names(4);
        let a = schedule(Order::Interleaved, 6, &d, 1);
        assert_eq!(
            a,
            schedule(Order::Interleaved, 6, &d, 1),
            "same seed, same schedule"
        );
        assert_ne!(
            a,
            schedule(Order::Interleaved, 6, &d, 2),
            "another seed, another order"
        );
        let first: Vec<&str> = (1..=6)
            .map(|b| {
                a.iter()
                    .find(|c| c.block == b)
                    .map_or("", |c| c.deployment.as_str())
            })
            .collect();
        assert!(
            first.iter().any(|f| *f != first[0]),
            "the order changes between blocks: {first:?}"
        );
    }

    #[test]
    fn every_deployment_takes_every_place_equally_often() {
        for seed in 0..50 {
            let d = names(3);
            let cells = schedule(Order::Interleaved, 6, &d, seed);
            for name in &d {
                let mut places = [0; 3];
                for b in 1..=6 {
                    let block: Vec<&ScheduleCell> = cells.iter().filter(|c| c.block == b).collect();
                    if let Some(i) = block.iter().position(|c| &c.deployment == name) {
                        places[i] += 1;
                    }
                }
                assert_eq!(places, [2, 2, 2], "seed {seed}, {name}");
            }
        }
    }

    #[test]
    fn blocked_runs_every_block_of_one_deployment_first() {
        let cells = schedule(Order::Blocked, 3, &names(2), 0);
        let got: Vec<(u32, &str)> = cells
            .iter()
            .map(|c| (c.block, c.deployment.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (1, "d0"),
                (2, "d0"),
                (3, "d0"),
                (1, "d1"),
                (2, "d1"),
                (3, "d1")
            ]
        );
    }
}
