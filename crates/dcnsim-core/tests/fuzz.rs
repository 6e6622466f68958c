//! The bounded fuzzing run of every test run: each reader (scenario TOML and JSON, flow
//! list, HPCC trace, CDF) gets every input of its corpus folder (`fuzz/corpus/<target>/`,
//! which keeps the inputs that once panicked as regression cases), its seeds, and a fixed
//! number of mutated inputs from a fixed seed; none may panic. Long runs: `dcnsim-fuzz`.

use dcnsim_core::fuzz::{self, Outcome, Target};
use std::path::{Path, PathBuf};

/// Mutated inputs per target (a few seconds in all).
const MUTATIONS: usize = 300;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run_target(t: Target) {
    let fixtures = std::env::temp_dir().join(format!("dcnsim-fuzz-test-{}-{}", t.name(), std::process::id()));
    fuzz::write_fixture_files(&fixtures).unwrap();
    let seeds = fuzz::seeds(t, &crate_dir().join("../.."), &crate_dir());
    let mut m = fuzz::Mutator::new(7, seeds.clone());
    let mut failures = Vec::new();
    let mut inputs: Vec<Vec<u8>> = seeds;
    inputs.extend((0..MUTATIONS).map(|_| m.next_input()));
    for input in &inputs {
        if let Outcome::Panic(msg) = fuzz::check(t, input, &fixtures) {
            failures.push(format!("{}: {msg}\n{}", fuzz::input_name(input), String::from_utf8_lossy(input)));
        }
    }
    let _ = std::fs::remove_dir_all(&fixtures);
    assert!(
        failures.is_empty(),
        "{} of {} inputs panicked:\n{}",
        failures.len(),
        inputs.len(),
        failures.join("\n---\n")
    );
}

#[test]
fn fuzz_scenario_toml() {
    run_target(Target::ScenarioToml);
}

#[test]
fn fuzz_scenario_json() {
    run_target(Target::ScenarioJson);
}

#[test]
fn fuzz_flowlist() {
    run_target(Target::FlowList);
}

#[test]
fn fuzz_trace() {
    run_target(Target::Trace);
}

#[test]
fn fuzz_cdf() {
    run_target(Target::Cdf);
}

#[test]
fn the_mutator_is_deterministic_and_reaches_every_edit() {
    let seeds = fuzz::builtin_seeds(Target::ScenarioToml);
    let a: Vec<Vec<u8>> = {
        let mut m = fuzz::Mutator::new(3, seeds.clone());
        (0..50).map(|_| m.next_input()).collect()
    };
    let mut m = fuzz::Mutator::new(3, seeds.clone());
    let b: Vec<Vec<u8>> = (0..50).map(|_| m.next_input()).collect();
    assert_eq!(a, b);
    // The structure-aware edits show up: odd quantities and extreme numbers.
    let all = a.iter().map(|x| String::from_utf8_lossy(x).into_owned()).collect::<String>();
    assert!(["1ps", "20kb", "1kbps", "nan", "18446744073709551615"].iter().any(|s| all.contains(s)), "{all}");
    let _ = Path::new(".");
}
