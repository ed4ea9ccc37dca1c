//! The stateful model test: sequences of steps chosen by a seed, over two
//! organizations with two keys each, through the real routers against the
//! local engines, as FoundationDB and TigerBeetle test. Steps are
//! integrators' requests (sites, loads, waybills by both upload paths,
//! deliveries, tickets, geocoding, reads and changes of another
//! organization's records), `Idempotency-Key` replays and reuses,
//! operators' steps (a key revoked, an entitlement switched, an
//! organization deactivated), the clock moved past each boundary (a lease,
//! the quota's hour, the retention), faults at the wire (a call that
//! never leaves, one cut after it took effect, every attempt of one cut,
//! the function killed, a request frozen past its lease or right after
//! its commit) and the slow outside world (a tracker that answers after
//! the service stopped waiting, an operator's command heard late, a
//! delivery's retry message delivered again after many others). After every step the answer is checked
//! against the reference (`reference.rs`) and the world against the
//! invariants (`checks.rs`). A failure shrinks to its shortest sequence,
//! printed as numbered steps with the seed; keep it in `regressions.rs`.
//!
//! `make test` runs `MODEL_CASES` (default 48) sequences of up to
//! `MODEL_STEPS` (30) steps from `MODEL_SEED` (fixed); `make model` runs
//! more (docs/testing.md).

mod checks;
mod reference;
mod regressions;
mod steps;
mod system;

use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::test_runner::{Config, RngSeed, TestError, TestRunner};
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest};

use reference::Model;
use steps::{Step, listing};
use system::System;

/// Steps taken, clock moves and faults made, over the whole run.
static SEQUENCES: AtomicUsize = AtomicUsize::new(0);
static STEPS: AtomicUsize = AtomicUsize::new(0);
static WAITS: AtomicUsize = AtomicUsize::new(0);
static FAULTS: AtomicUsize = AtomicUsize::new(0);

struct Api;

impl StateMachineTest for Api {
    type SystemUnderTest = System;
    type Reference = Model;

    fn init_test(_: &Model) -> System {
        SEQUENCES.fetch_add(1, Ordering::Relaxed);
        api_tests::block(System::new())
    }

    fn apply(mut system: System, model: &Model, step: Step) -> System {
        STEPS.fetch_add(1, Ordering::Relaxed);
        match &step {
            Step::Wait(_) => {
                WAITS.fetch_add(1, Ordering::Relaxed);
            }
            Step::Faulted { .. }
            | Step::Paused { .. }
            | Step::PausedTwice { .. }
            | Step::Unreadable { .. }
            | Step::Unheard { .. }
            | Step::Late { .. }
            | Step::LateReceivers { .. }
            | Step::CopyPaused { .. } => {
                FAULTS.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        }
        system.apply(model, &step);
        system
    }

    fn check_invariants(system: &System, model: &Model) {
        checks::invariants(system, model);
    }
}

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name} is a number, got {v:?}"))
        })
        .unwrap_or(default)
}

/// Runs `cases` sequences of up to `steps` steps from `seed`; a failure
/// panics with its shrunk sequence.
fn explore(cases: u32, steps: usize, seed: u64) {
    let config = Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        max_shrink_iters: u32::try_from(setting("MODEL_SHRINK_ITERS", 300)).unwrap_or(300),
        max_local_rejects: 1_000_000,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config.clone());
    let strategy = Model::sequential_strategy(1..=steps);
    let found = runner.run(&strategy, |(initial, transitions, seen)| {
        Api::test_sequential(config.clone(), initial, transitions, seen);
        Ok(())
    });
    match found {
        Ok(()) => {}
        // Run again as the first part of a run from this seed.
        Err(TestError::Fail(why, (_, transitions, _))) => panic!(
            "the model test failed (MODEL_SEED={seed} MODEL_CASES={} MODEL_STEPS={steps}); shortest sequence found:\n{}\n{why}",
            u64::from(cases) * PARTS,
            listing(&transitions)
        ),
        Err(TestError::Abort(why)) => panic!("the model test gave up: {why}"),
    }
}

/// The run's counts, printed and written to `MODEL_SUMMARY` (for the
/// totals of `make test`).
fn summarize(seed: u64, passed: bool) {
    let [cases, steps, waits, faults, checks] =
        [&SEQUENCES, &STEPS, &WAITS, &FAULTS, &checks::CHECKS].map(|n| n.load(Ordering::Relaxed));
    eprintln!(
        "MODEL: {cases} sequences from seed {seed}, {steps} steps, {waits} clock moves, {faults} faults, {checks} invariant checks{}",
        if passed { "" } else { ", FAILED" }
    );
    if let Ok(path) = std::env::var("MODEL_SUMMARY") {
        let summary = serde_json::json!({
            "cases": cases, "seed": seed, "steps": steps, "waits": waits,
            "faults": faults, "checks": checks, "passed": passed,
        });
        let _ = std::fs::write(path, summary.to_string());
    }
}

/// Runs `steps` from a fresh system, checking each step and the
/// invariants after it (the regressions).
fn replay(steps: Vec<Step>) {
    api_tests::on_large_stack(|| {
        Api::test_sequential(Config::default(), Model::new(), steps, None);
    });
}

/// The seeded run, in `PARTS` tests that run side by side (one test of
/// 48 sequences took five minutes alone and was the test run's longest
/// path): part `p` explores its share of `MODEL_CASES` sequences (48) of
/// up to `MODEL_STEPS` steps (30) from `MODEL_SEED + p` (the seed fixed),
/// or as many as fit in `MODEL_MINUTES` when given (in rounds of 25, the
/// seed counting up by `PARTS` a round).
const PARTS: u64 = 4;

#[test]
fn seeded_sequences_keep_every_promise_1() {
    seeded_part(0);
}

#[test]
fn seeded_sequences_keep_every_promise_2() {
    seeded_part(1);
}

#[test]
fn seeded_sequences_keep_every_promise_3() {
    seeded_part(2);
}

#[test]
fn seeded_sequences_keep_every_promise_4() {
    seeded_part(3);
}

/// Whether a part of the seeded run failed (the summary says so, whichever
/// part writes it last).
static FAILED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn seeded_part(part: u64) {
    let cases = setting("MODEL_CASES", 48);
    let share = u32::try_from(cases / PARTS + u64::from(part < cases % PARTS)).unwrap_or(12);
    let steps = usize::try_from(setting("MODEL_STEPS", 30)).unwrap_or(30);
    let seed = setting("MODEL_SEED", 20261126);
    let minutes = setting("MODEL_MINUTES", 0);
    let until = std::time::Instant::now() + std::time::Duration::from_secs(minutes * 60);
    let outcome = std::panic::catch_unwind(|| {
        api_tests::on_large_stack(|| {
            if minutes == 0 {
                return explore(share, steps, seed + part);
            }
            let (mut done, mut round) = (0, 0);
            while done < share && std::time::Instant::now() < until {
                let n = (share - done).min(25);
                explore(n, steps, seed + part + round * PARTS);
                (done, round) = (done + n, round + 1);
            }
        })
    });
    if outcome.is_err() {
        FAILED.store(true, Ordering::SeqCst);
    }
    summarize(seed, !FAILED.load(Ordering::SeqCst));
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}
