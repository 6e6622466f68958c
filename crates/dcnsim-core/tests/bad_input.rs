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
