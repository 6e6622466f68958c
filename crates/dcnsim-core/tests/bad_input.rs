//! Every kind of bad input named in the foundation issue is rejected before anything runs,
//! with an error naming the field; the core never panics on user input.

use dcnsim_core::{parse_scenario, Format};
use std::path::{Path, PathBuf};

const GOOD_TOPO: &str = r#"[topology]
kind = "leaf_spine"
leaves = 2
hosts_per_leaf = 4
spines = 2
"#;

fn toml_with(topo: &str, transport: &str, workload: &str, extra: &str) -> String {
    format!("{topo}\n[transport]\n{transport}\n\n[[workload]]\n{workload}\n{extra}")
}

fn tmpdir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("dcnsim-bad-input-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn err_field(doc: &str, base: &Path) -> (String, String) {
    match parse_scenario(doc, Format::Toml, base) {
        Ok(_) => panic!("accepted a bad scenario:\n{doc}"),
        Err(e) => (e.field(), e.to_string()),
    }
}

#[test]
fn each_bad_input_names_its_field() {
    let dir = tmpdir();
    std::fs::write(dir.join("nonmono.txt"), "1000 0.5\n500 0.7\n2000 1.0\n").unwrap();
    std::fs::write(dir.join("short.txt"), "1000 0.2\n2000 0.7\n").unwrap();
    std::fs::write(dir.join("flows.csv"), "src,dst,size,start\n0,1,1000,0\n0,99,1000,5\n").unwrap();
    let poisson = "pattern = \"poisson\"\ncdf = \"websearch\"\nload = 0.5\nflows = 10";
    let cases: Vec<(String, &str)> = vec![
        (format!("colour = 1\n{}", toml_with(GOOD_TOPO, "protocol = \"dctcp\"", poisson, "")), "colour"),
        (toml_with(GOOD_TOPO, "protocol = \"dctcp\"", poisson, "[network]\nbufer = \"1KB\""), "network.bufer"),
        (toml_with(GOOD_TOPO, "protocol = \"cubic\"", poisson, ""), "transport.protocol"),
        (toml_with(GOOD_TOPO, "protocol = \"dctcp\"\ninit_cwnd = 0", poisson, ""), "transport.init_cwnd"),
        (toml_with(GOOD_TOPO, "protocol = \"dctcp\"\nmin_rto = \"0us\"", poisson, ""), "transport.min_rto"),
        (toml_with(GOOD_TOPO, "protocol = \"dctcp\"\nwindow = 3", poisson, ""), "transport.window"),
        (
            toml_with(
                &GOOD_TOPO.replace("spines = 2", "spines = 2\nhost_rate = \"0Gbps\""),
                "protocol = \"dctcp\"",
                poisson,
                "",
            ),
            "topology.host_rate",
        ),
        (
            toml_with(
                &GOOD_TOPO.replace("spines = 2", "spines = 2\ncore_rate = -100"),
                "protocol = \"dctcp\"",
                poisson,
                "",
            ),
            "topology.core_rate",
        ),
        (
            toml_with(&GOOD_TOPO.replace("leaves = 2", "leaves = 0"), "protocol = \"dctcp\"", poisson, ""),
            "topology.leaves",
        ),
        (toml_with("[topology]\nkind = \"hypercube\"", "protocol = \"dctcp\"", poisson, ""), "topology.kind"),
        (toml_with(GOOD_TOPO, "protocol = \"dctcp\"", &poisson.replace("0.5", "1.0"), ""), "workload[0].load"),
        (toml_with(GOOD_TOPO, "protocol = \"dctcp\"", &poisson.replace("0.5", "1.2"), ""), "workload[0].load"),
        (toml_with(GOOD_TOPO, "protocol = \"dctcp\"", &poisson.replace("0.5", "0"), ""), "workload[0].load"),
        (toml_with(GOOD_TOPO, "protocol = \"dctcp\"", &poisson.replace("0.5", "-0.3"), ""), "workload[0].load"),
        (
            toml_with(GOOD_TOPO, "protocol = \"dctcp\"", "pattern = \"incast\"\nreceiver = 8\nsenders = 4", ""),
            "workload[0].receiver",
        ),
        (
            toml_with(GOOD_TOPO, "protocol = \"dctcp\"", "pattern = \"incast\"\nreceiver = 0\nsenders = 20", ""),
            "workload[0].senders",
        ),
        (toml_with(GOOD_TOPO, "protocol = \"dctcp\"", "pattern = \"teleport\"", ""), "workload[0].pattern"),
        (
            toml_with(GOOD_TOPO, "protocol = \"dctcp\"", &poisson.replace("websearch", "nonmono.txt"), ""),
            "workload[0].cdf",
        ),
        (
            toml_with(GOOD_TOPO, "protocol = \"dctcp\"", &poisson.replace("websearch", "short.txt"), ""),
            "workload[0].cdf",
        ),
        (
            toml_with(GOOD_TOPO, "protocol = \"dctcp\"", &poisson.replace("websearch", "missing.txt"), ""),
            "workload[0].cdf",
        ),
        (
            toml_with(GOOD_TOPO, "protocol = \"dctcp\"", "pattern = \"explicit\"\nfile = \"flows.csv\"", ""),
            "workload[0].file",
        ),
        (toml_with(GOOD_TOPO, "protocol = \"dctcp\"", poisson, "[network]\nbuffer = \"1KB\""), "network.buffer"),
        (
            toml_with(
                GOOD_TOPO,
                "protocol = \"dctcp\"",
                poisson,
                "[network]\npriorities = 2\nclass_buffer = [\"1MB\"]",
            ),
            "network.class_buffer",
        ),
        (
            toml_with(
                GOOD_TOPO,
                "protocol = \"dctcp\"",
                poisson,
                "[network]\npriorities = 2\nclass_buffer = [\"1MB\", \"100B\"]",
            ),
            "network.class_buffer[1]",
        ),
        (
            toml_with(
                GOOD_TOPO,
                "protocol = \"dctcp\"",
                poisson,
                "[network]\npriorities = 2\npushout_classes = [1, 2]",
            ),
            "network.pushout_classes",
        ),
        (
            toml_with(
                GOOD_TOPO,
                "protocol = \"ndp\"",
                poisson,
                "[network]\nqueue_policy = \"ndp_trim\"\npushout_classes = [1]",
            ),
            "network.pushout_classes",
        ),
        (
            toml_with(GOOD_TOPO, "protocol = \"dctcp\"", poisson, "[output]\nsample_ports = \"spines\""),
            "output.sample_ports",
        ),
        (
            toml_with(GOOD_TOPO, "protocol = \"dctcp\"", poisson, "[network.trim]\ntrim_threshold = 0"),
            "network.trim.trim_threshold",
        ),
        (
            toml_with(
                GOOD_TOPO,
                "protocol = \"ndp\"",
                poisson,
                "[network]\nqueue_policy = \"ndp_trim\"\n[network.trim]\ntail_trim_probability = 1.5",
            ),
            "network.trim.tail_trim_probability",
        ),
        (
            toml_with(GOOD_TOPO, "protocol = \"dctcp\"", poisson, "[network.trim]\ntail_trim_probability = -0.1"),
            "network.trim.tail_trim_probability",
        ),
        (
            toml_with(GOOD_TOPO, "protocol = \"dctcp\"", poisson, "[network.selective]\nthreshhold = 1"),
            "network.selective.threshhold",
        ),
        (
            toml_with(GOOD_TOPO, "protocol = \"dctcp\"", poisson, "[network]\nqueue_policy = \"red\""),
            "network.queue_policy",
        ),
        // PPT's Eq. 3 lambda: positive; it only acts when [network] gives no thresholds, so
        // next to different explicit ones it is rejected; network.ecn_lambda (one K for every
        // class) does not apply to PPT's per-class thresholds.
        (toml_with(GOOD_TOPO, "protocol = \"ppt\"\nlambda_lcp = 0", poisson, ""), "transport.lambda_lcp"),
        (
            toml_with(GOOD_TOPO, "protocol = \"ppt\"\nlambda_hcp = 0.3", poisson, "[network]\necn_k = \"96KB\""),
            "transport.lambda_hcp",
        ),
        (toml_with(GOOD_TOPO, "protocol = \"ppt\"", poisson, "[network]\necn_lambda = 0.2"), "network.ecn_lambda"),
        ("this is = = not toml".to_string(), ""),
    ];
    for (doc, field) in &cases {
        let (f, msg) = err_field(doc, &dir);
        assert_eq!(&f, field, "wrong field for:\n{doc}\nmessage: {msg}");
        if !field.is_empty() {
            assert!(msg.contains(field), "message names the field: {msg}");
        }
        assert!(msg.len() > field.len() + 10, "message says what is wrong: {msg}");
    }
    // The CDF errors say which problem they found.
    let (_, m) = err_field(&cases[17].0, &dir);
    assert!(m.contains("nonmono.txt"), "{m}");
    let (_, m) = err_field(&cases[20].0, &dir);
    assert!(m.contains("99"), "the missing host is named: {m}");
}

/// Mutated documents (random bytes flipped or fields deleted) never panic the core.
#[test]
fn garbage_never_panics() {
    let good = toml_with(
        GOOD_TOPO,
        "protocol = \"dctcp\"",
        "pattern = \"poisson\"\ncdf = \"websearch\"\nload = 0.5\nflows = 10",
        "",
    );
    assert!(parse_scenario(&good, Format::Toml, Path::new(".")).is_ok());
    let mut rng = dcnsim_core::rng::Rng::new(5);
    let bytes = good.as_bytes();
    for _ in 0..3000 {
        let mut b = bytes.to_vec();
        for _ in 0..1 + rng.below(4) {
            let i = rng.below(b.len() as u64) as usize;
            let alphabet = b" 0123456789-.=\"[]abcxyz_\n";
            b[i] = alphabet[rng.below(alphabet.len() as u64) as usize];
        }
        if let Ok(s) = String::from_utf8(b) {
            let r = std::panic::catch_unwind(|| parse_scenario(&s, Format::Toml, Path::new(".")).map(|_| ()));
            assert!(r.is_ok(), "panicked on:\n{s}");
        }
    }
}

/// The normalized scenario (scenario.json next to every result) parses again and describes
/// the same run: same flows, same normalized form.
#[test]
fn normalized_scenario_round_trips() {
    let doc = toml_with(
        GOOD_TOPO,
        "protocol = \"dctcp\"\ninit_cwnd = 4",
        "pattern = \"poisson\"\ncdf = \"websearch\"\nload = 0.5\nflows = 50",
        "[output]\nsample_interval = \"100us\"",
    );
    let a = parse_scenario(&doc, Format::Toml, Path::new(".")).unwrap();
    let json = a.to_json();
    let b = parse_scenario(&json, Format::Json, Path::new(".")).unwrap_or_else(|e| panic!("{e}\n{json}"));
    assert_eq!(b.to_json(), json);
    assert_eq!(a.flows(), b.flows());
}

// ---- Issue 14: units, non-finite numbers, memory, endless inputs, stop reasons ----------

const INCAST: &str = "pattern = \"incast\"\nreceiver = 0\nsenders = 3\nsize = \"20KB\"";

/// A time, size or rate without a unit is refused, naming the field and the accepted units
/// (`time_limit = 10` used to mean 10 ps and finish nothing; `sample_interval = 100` used to
/// sample every 100 ps and exhaust memory).
#[test]
fn bare_numbers_need_a_unit() {
    let dir = tmpdir();
    let cases = [
        ("[run]\ntime_limit = 10", "run.time_limit", "ps, ns, us, ms, s"),
        ("[output]\nsample_interval = 100", "output.sample_interval", "ps, ns, us, ms, s"),
        ("[network]\nbuffer = 120000", "network.buffer", "KB"),
        ("[network]\nmtu = 1500", "network.mtu", "KB"),
        ("[run]\ntime_limit = \"10\"", "run.time_limit", "ps, ns, us, ms, s"),
        ("[run]\ntime_limit = 2.5", "run.time_limit", "ps, ns, us, ms, s"),
    ];
    for (extra, field, units) in cases {
        let doc = toml_with(GOOD_TOPO, "protocol = \"dctcp\"", INCAST, extra);
        let (f, msg) = err_field(&doc, &dir);
        assert_eq!(f, field, "{msg}");
        assert!(msg.contains("needs a unit") && msg.contains(units), "{msg}");
    }
    let doc =
        toml_with(&GOOD_TOPO.replace("spines = 2", "spines = 2\nhost_rate = 40"), "protocol = \"dctcp\"", INCAST, "");
    let (f, msg) = err_field(&doc, &dir);
    assert_eq!(f, "topology.host_rate");
    assert!(msg.contains("needs a unit") && msg.contains("Gbps"), "{msg}");
    let doc = toml_with(GOOD_TOPO, "protocol = \"dctcp\"\nmin_rto = 1000", INCAST, "");
    assert_eq!(err_field(&doc, &dir).0, "transport.min_rto");
    let doc = toml_with(GOOD_TOPO, "protocol = \"dctcp\"", &INCAST.replace("\"20KB\"", "20000"), "");
    assert_eq!(err_field(&doc, &dir).0, "workload[0].size");
}

/// Bits and bytes are never confused: "20kb" (kilobits?) is refused for a size instead of
/// being read as 20,000 bytes; "20KB" is 20,000 bytes.
#[test]
fn lowercase_b_sizes_are_refused_as_bits() {
    let dir = tmpdir();
    for bad in ["20kb", "20Kb", "2Mb", "1500b"] {
        let doc = toml_with(GOOD_TOPO, "protocol = \"dctcp\"", &INCAST.replace("20KB", bad), "");
        let (f, msg) = err_field(&doc, &dir);
        assert_eq!(f, "workload[0].size", "{msg}");
        assert!(msg.contains("bits"), "{msg}");
    }
    let doc = toml_with(GOOD_TOPO, "protocol = \"dctcp\"", INCAST, "");
    let sc = parse_scenario(&doc, Format::Toml, &dir).unwrap();
    assert!(sc.flows().iter().all(|f| f.size.0 == 20_000));
    let doc = toml_with(
        &GOOD_TOPO.replace("spines = 2", "spines = 2\nhost_rate = \"10GBps\""),
        "protocol = \"dctcp\"",
        INCAST,
        "",
    );
    let (f, msg) = err_field(&doc, &dir);
    assert_eq!(f, "topology.host_rate");
    assert!(msg.contains("bits per second"), "{msg}");
}

/// NaN and infinities (TOML `nan`/`inf`, JSON `NaN`/`Infinity` as Python writes them) are
/// refused naming the field and the value, not as "required field is missing" or "null".
#[test]
fn non_finite_numbers_name_the_field_and_value() {
    let dir = tmpdir();
    let poisson = "pattern = \"poisson\"\ncdf = \"websearch\"\nload = nan\nflows = 10";
    let (f, msg) = err_field(&toml_with(GOOD_TOPO, "protocol = \"dctcp\"", poisson, ""), &dir);
    assert_eq!(f, "workload[0].load");
    assert!(msg.to_lowercase().contains("nan") && msg.contains("finite"), "{msg}");
    let (f, msg) =
        err_field(&toml_with(GOOD_TOPO, "protocol = \"dctcp\"", INCAST, "[network]\necn_lambda = inf"), &dir);
    assert_eq!(f, "network.ecn_lambda");
    assert!(msg.contains("inf"), "{msg}");
    let (f, msg) = err_field(&toml_with(GOOD_TOPO, "protocol = \"dctcp\"", INCAST, "[run]\ntime_limit = -inf"), &dir);
    assert_eq!(f, "run.time_limit");
    assert!(msg.contains("-inf"), "{msg}");
    let json = r#"{"topology": {"kind": "single_switch", "hosts": 4},
        "transport": {"protocol": "dctcp"},
        "workload": [{"pattern": "poisson", "cdf": "websearch", "load": NaN, "flows": 10}]}"#;
    let e = parse_scenario(json, Format::Json, &dir).expect_err("NaN accepted");
    assert_eq!(e.field(), "workload[0].load");
    assert!(e.to_string().contains("NaN"), "{e}");
    let json = json.replace("NaN", "0.5").replace("\"hosts\": 4", "\"hosts\": 4, \"host_rate\": Infinity");
    let e = parse_scenario(&json, Format::Json, &dir).expect_err("Infinity accepted");
    assert_eq!(e.field(), "topology.host_rate");
}

/// `sample_interval = "1ps"` (and other sampling that cannot fit) is refused before the run
/// by the memory estimate, naming the field; with a wider interval it is accepted.
#[test]
fn sampling_beyond_the_memory_limit_is_refused_before_the_run() {
    let dir = tmpdir();
    let doc = toml_with(
        GOOD_TOPO,
        "protocol = \"dctcp\"",
        INCAST,
        "[run]\ntime_limit = \"10ms\"\n[output]\nsample_interval = \"1ps\"",
    );
    let (f, msg) = err_field(&doc, &dir);
    assert_eq!(f, "output.sample_interval");
    assert!(msg.contains("run.memory_limit") && msg.contains("GB"), "{msg}");
    let ok = doc.replace("\"1ps\"", "\"10us\"");
    assert!(parse_scenario(&ok, Format::Toml, &dir).is_ok());
    // The limit is a field: lowered, it refuses the same scenario.
    let low = ok.replace("[run]", "[run]\nmemory_limit = \"1MB\"");
    assert_eq!(err_field(&low, &dir).0, "output.sample_interval");
}

/// Without a time limit the number of samples is unknown: the sampler stops the run at the
/// limit with an error naming the field, instead of growing until the process aborts. The
/// issue's case: 1 Kbps host links (a run of about an hour of simulated time) sampled every
/// microsecond.
#[test]
fn sampling_without_a_time_limit_stops_at_the_memory_limit() {
    let dir = tmpdir();
    let topo = GOOD_TOPO.replace("spines = 2", "spines = 2\nhost_rate = \"1Kbps\"\ncore_rate = \"1Kbps\"");
    let doc = toml_with(
        &topo,
        "protocol = \"dctcp\"",
        INCAST,
        "[run]\nmemory_limit = \"20MB\"\n[output]\nsample_interval = \"1us\"",
    );
    let sc = parse_scenario(&doc, Format::Toml, &dir).unwrap();
    let out = dcnsim_core::run(&sc, &mut |_| true);
    let e = out.error.clone().expect("the run should stop at the sample limit");
    assert_eq!(e.field(), "output.sample_interval");
    assert!(e.to_string().contains("run.memory_limit"), "{e}");
    assert_eq!(out.counters.stop_reason, dcnsim_core::output::StopReason::Error);
    assert!(!out.counters.cut_at_limit);
    // The samples kept fit in the limit (28 B per link row, 21 B per queue row, x2 copies).
    let bytes = out.link_samples.t_ps.len() * 28 + out.queue_samples.t_ps.len() * 21;
    assert!(bytes * 2 <= 20_000_000, "{bytes} B of samples");
    assert!(bytes > 1_000_000, "the sampler ran until near the limit: {bytes} B");
}

/// A 1 Kbps host link that its transport hands far more than it can send: the NIC queue
/// limit ends the run with an error naming the host and the field, not an abort. (With the
/// default host the per-flow NIC limit keeps a TCP flow's NIC bytes near 1 MB; the hosts of
/// ns-2-style simulators, `[host]` below, have no such limit.)
#[test]
fn an_overfull_host_nic_ends_the_run_with_an_error() {
    let dir = tmpdir();
    let topo = GOOD_TOPO.replace("spines = 2", "spines = 2\nhost_rate = \"1Kbps\"");
    let doc = toml_with(
        &topo,
        "protocol = \"tcp\"\ninit_cwnd = 100000",
        &INCAST.replace("20KB", "100MB"),
        "[host]\nnic_qdisc = \"fifo\"\ntsq = false\ncwnd_validation = false\n[run]\nnic_queue_limit = \"1MB\"",
    );
    let sc = parse_scenario(&doc, Format::Toml, &dir).unwrap();
    let out = dcnsim_core::run(&sc, &mut |_| true);
    match out.error.clone() {
        Some(dcnsim_core::limits::RunError::NicQueue { host, bytes, limit }) => {
            assert!((1..8).contains(&host), "a sender: {host}");
            assert!(bytes > limit.0 && limit.0 == 1_000_000);
        }
        other => panic!("expected a NIC queue error, got {other:?}"),
    }
    let e = out.error.unwrap();
    assert_eq!(e.field(), "run.nic_queue_limit");
    assert!(e.to_string().contains("host"), "{e}");
    // The same scenario with the default limit (1 GB) does not trip it.
    let sc =
        parse_scenario(&doc.replace("nic_queue_limit = \"1MB\"", "time_limit = \"1s\""), Format::Toml, &dir).unwrap();
    assert!(dcnsim_core::run(&sc, &mut |_| true).error.is_none());
}

/// A trace or flow list that never ends (a device, a FIFO) is refused once it exceeds
/// `run.input_file_limit`, naming the field, instead of being read until memory runs out.
#[test]
fn an_endless_trace_is_refused_at_the_input_file_limit() {
    let dir = tmpdir();
    if !Path::new("/dev/zero").exists() {
        return;
    }
    for (pattern, field) in [("hpcc", "workload[0].file"), ("explicit", "workload[0].file")] {
        let w = format!("pattern = \"{pattern}\"\nfile = \"/dev/zero\"");
        let doc = toml_with(GOOD_TOPO, "protocol = \"dctcp\"", &w, "[run]\ninput_file_limit = \"1MB\"");
        let (f, msg) = err_field(&doc, &dir);
        assert_eq!(f, field);
        assert!(msg.contains("run.input_file_limit"), "{msg}");
    }
    let w = "pattern = \"poisson\"\ncdf = \"/dev/zero\"\nload = 0.5\nflows = 10";
    let doc = toml_with(GOOD_TOPO, "protocol = \"dctcp\"", w, "[run]\ninput_file_limit = \"1MB\"");
    let (f, msg) = err_field(&doc, &dir);
    assert_eq!(f, "workload[0].cdf");
    assert!(msg.contains("run.input_file_limit"), "{msg}");
}

/// A run without a time limit never reports that it stopped at its time limit: with
/// background flows it stops once the foreground flows finished (`foreground_done`); a
/// time-limited run that is cut says `time_limit`; a run that finishes says `done`. (A
/// progress callback that stops the run gives `interrupted`, not `time_limit`: see
/// `sim::tests`.)
#[test]
fn the_stop_reason_is_the_real_one() {
    use dcnsim_core::output::StopReason;
    let dir = tmpdir();
    let with_bg = format!("{INCAST}\n\n[[workload]]\npattern = \"background\"\npairs = [[4, 5]]");
    let doc = toml_with(GOOD_TOPO, "protocol = \"dctcp\"", &with_bg, "");
    let sc = parse_scenario(&doc, Format::Toml, &dir).unwrap();
    let out = dcnsim_core::run(&sc, &mut |_| true);
    assert_eq!(out.counters.stop_reason, StopReason::ForegroundDone);
    assert!(!out.counters.cut_at_limit, "no time limit, yet reported cut at it");
    assert!(out.flows.finish_ps[..3].iter().all(|&f| f != u64::MAX));

    let doc = toml_with(GOOD_TOPO, "protocol = \"dctcp\"", INCAST, "[run]\ntime_limit = \"5us\"");
    let out = dcnsim_core::run(&parse_scenario(&doc, Format::Toml, &dir).unwrap(), &mut |_| true);
    assert_eq!(out.counters.stop_reason, StopReason::TimeLimit);
    assert!(out.counters.cut_at_limit);

    let doc = toml_with(GOOD_TOPO, "protocol = \"dctcp\"", INCAST, "");
    let out = dcnsim_core::run(&parse_scenario(&doc, Format::Toml, &dir).unwrap(), &mut |_| true);
    assert_eq!(out.counters.stop_reason, StopReason::Done);
    assert!(!out.counters.cut_at_limit);
}

/// Counts the fuzzer found allocating before any check (4 billion spines; a credit queue
/// reserved in full up front) are refused or no longer reserved: no abort.
#[test]
fn huge_counts_are_refused_before_allocating() {
    let dir = tmpdir();
    let doc = toml_with(&GOOD_TOPO.replace("spines = 2", "spines = 4294967295"), "protocol = \"dctcp\"", INCAST, "");
    assert_eq!(err_field(&doc, &dir).0, "topology.spines");
    let doc = toml_with(
        GOOD_TOPO,
        "protocol = \"expresspass\"",
        INCAST,
        "[network]\nqueue_policy = \"expresspass_credit\"\ncredit = { credit_queue = 4000000000 }",
    );
    // A huge credit queue is a legal (if odd) limit: accepted without reserving it up front.
    assert!(parse_scenario(&doc, Format::Toml, &dir).is_ok());
}

#[test]
fn trace_flows_beyond_the_flow_count_are_refused_naming_the_field() {
    let dir = tmpdir().join("trace-flows");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("two.csv"), "src,dst,size,start\n0,1,1000,0\n2,3,1000,5\n").unwrap();
    let poisson = "pattern = \"poisson\"\ncdf = \"websearch\"\nload = 0.5\nflows = 10";
    let explicit = "pattern = \"explicit\"\nfile = \"two.csv\"";
    let doc = |wl: &str, ids: &str| {
        toml_with(GOOD_TOPO, "protocol = \"dctcp\"", wl, &format!("[output]\ntrace_flows = {ids}"))
    };
    for (wl, bad, n) in [(poisson, "[3, 10]", 10), (explicit, "[2]", 2)] {
        let (field, msg) = err_field(&doc(wl, bad), &dir);
        assert_eq!(field, "output.trace_flows", "{msg}");
        assert!(msg.contains(&format!("the workload has {n} flows")), "{msg}");
        assert!(msg.contains("flows - 1"), "{msg}");
    }
    for (wl, good) in [(poisson, "[0, 9]"), (explicit, "[0, 1]"), (explicit, "[]")] {
        let sc = parse_scenario(&doc(wl, good), Format::Toml, &dir).unwrap_or_else(|e| panic!("{good}: {e}"));
        assert!(sc.output.tracing());
    }
}
