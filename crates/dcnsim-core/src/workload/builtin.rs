//! The flow-size CDFs shipped with dcnsim, under stable names.
//!
//! The data files live in `crates/dcnsim-core/data/cdf/` (byte-for-byte copies of
//! public data files; the public source and the mean of each are in `data/cdf/PROVENANCE.md`) and are compiled in with `include_str!`.
//! Each CDF has a native reading (how the simulator it comes from reads it); a workload can
//! override it with `cdf_reading`.

use super::cdf::{CdfError, CdfFormat, CdfOptions, CdfUnit, EmpiricalCdf, ParetoTail, Reading};

/// One shipped CDF.
#[derive(Clone, Copy, Debug)]
pub struct ShippedCdf {
    /// Canonical name used in scenarios (`cdf = "websearch"`).
    pub name: &'static str,
    /// Other accepted names.
    pub aliases: &'static [&'static str],
    /// File name under `data/cdf/`.
    pub file: &'static str,
    text: &'static str,
    pub format: CdfFormat,
    pub unit: CdfUnit,
    /// The reading of the simulator the file comes from.
    pub reading: Reading,
    /// Continuation beyond the file's last point (only Homa W1).
    pub tail: Option<ParetoTail>,
    /// What the distribution is, in a few words.
    pub description: &'static str,
}

impl ShippedCdf {
    /// Parse the compiled-in file with the given reading.
    pub fn load(&self, reading: Reading) -> Result<EmpiricalCdf, CdfError> {
        let opts = CdfOptions { format: self.format, unit: self.unit, packet_size: None, reading };
        EmpiricalCdf::parse_with_tail(self.text, &opts, self.tail)
    }
}

/// Homa W1 (Facebook memcached) beyond CDF 0.47: HomaSimulation's generalized Pareto,
/// k = 0.348238, sigma = 214.476, from 15 B, capped at 2^30 B (`data/cdf/PROVENANCE.md`).
pub const W1_TAIL: ParetoTail =
    ParetoTail { from_cdf: 0.47, location: 15.0, shape: 0.348238, scale: 214.476, cap: 1_073_741_824.0 };

macro_rules! data {
    ($f:literal) => {
        ($f, include_str!(concat!("../../data/cdf/", $f)))
    };
}

const fn shipped(
    name: &'static str,
    aliases: &'static [&'static str],
    file: (&'static str, &'static str),
    format: CdfFormat,
    unit: CdfUnit,
    reading: Reading,
    description: &'static str,
) -> ShippedCdf {
    ShippedCdf { name, aliases, file: file.0, text: file.1, format, unit, reading, tail: None, description }
}

use CdfFormat::{Homa, Ns2, Pct};
use CdfUnit::{Bytes as B, Packets as P};
use Reading::{Linear, Step};

/// Every shipped CDF (one row per CDF: name, aliases, file, format, unit, native reading).
#[rustfmt::skip]
pub const SHIPPED: &[ShippedCdf] = &[
    shipped("websearch", &["web_search"], data!("websearch_dctcp_hpcc_bytes_pct.txt"), Pct, B, Linear,
        "DCTCP web search (Alizadeh et al. 2010), HPCC's byte file; mean 1.711 MB"),
    shipped("websearch_pias", &[], data!("websearch_dctcp_pias_ns2_packets.txt"), Ns2, P, Linear,
        "DCTCP web search, PIAS ns-2 packet file (x1460 B); mean 1.666 MB"),
    shipped("datamining", &["data_mining", "vl2"], data!("datamining_vl2_pias_ns2_packets.txt"), Ns2, P, Linear,
        "VL2 data mining (Greenberg et al. 2009), PIAS ns-2 packet file (x1460 B); mean 7.470 MB"),
    shipped("datamining_xpass", &[], data!("datamining_vl2_xpass_ns2_bytes.txt"), Ns2, B, Linear,
        "VL2 data mining, ExpressPass ns-2 byte file; mean 7.488 MB"),
    shipped("webserver", &["fb_webserver"], data!("fb_webserver_intracluster_homa_bytes_step.txt"), Homa, B, Step,
        "Facebook web server, intra-cluster (Roy et al. 2015), HomaSimulation file; mean 62.9 KB"),
    shipped("webserver_xpass", &[], data!("fb_webserver_xpass_ns2_bytes.txt"), Ns2, B, Linear,
        "Facebook web server, ExpressPass ns-2 byte file; mean 66.1 KB"),
    shipped("cachefollower", &["fb_cachefollower", "cache_follower"], data!("fb_cachefollower_intracluster_homa_bytes_step.txt"), Homa, B, Step,
        "Facebook cache follower, intra-cluster, HomaSimulation file; mean 693.0 KB"),
    shipped("cachefollower_xpass", &[], data!("fb_cachefollower_xpass_ns2_bytes.txt"), Ns2, B, Linear,
        "Facebook cache follower, ExpressPass ns-2 byte file; mean 712.6 KB"),
    shipped("hadoop", &["fb_hadoop"], data!("fb_hadoop_hpcc_bytes_pct.txt"), Pct, B, Linear,
        "Facebook Hadoop, HPCC FbHdp file (HPCC Fig. 11); mean 120.4 KB"),
    ShippedCdf {
        tail: Some(W1_TAIL),
        ..shipped("memcached_w1", &["w1", "memcached", "fb_keyvalue"], data!("homa_w1_fb_memcached_keyvalue_PARTIAL_bytes_step.txt"), Homa, B, Step,
            "Homa W1, Facebook memcached key-value: file to CDF 0.47 plus HomaSimulation's generalized-Pareto tail; mean ~185 B")
    },
    shipped("google_search_rpc", &["w2"], data!("homa_w2_google_search_rpc_bytes_step.txt"), Homa, B, Step,
        "Homa W2, Google search RPC; mean 440.8 B"),
    shipped("google_all_rpc", &["w3"], data!("homa_w3_google_all_rpc_bytes_step.txt"), Homa, B, Step,
        "Homa W3, Google all RPC; mean 2927 B"),
    shipped("hadoop_w4", &["w4"], data!("homa_w4_fb_hadoop_all_bytes_step.txt"), Homa, B, Step,
        "Homa W4, Facebook Hadoop (all), HomaSimulation file; mean 127.8 KB"),
    shipped("websearch_w5", &["w5"], data!("homa_w5_websearch_dctcp_packets_step.txt"), Homa, P, Step,
        "Homa W5, DCTCP web search, HomaSimulation 400-point packet file (x1442 B); mean 2.516 MB"),
    shipped("uniform_pase", &[], data!("uniform_pase_2KB_198KB_CONSTRUCTED_bytes_pct.txt"), Pct, B, Linear,
        "PASE uniform U[2 KB, 198 KB] (constructed two-point file, linear only); mean 100 KB"),
    shipped("uniform_d2tcp", &[], data!("uniform_d2tcp_100KB_500KB_CONSTRUCTED_bytes_pct.txt"), Pct, B, Linear,
        "D2TCP uniform U[100 KB, 500 KB] (constructed two-point file, linear only); mean 300 KB"),
    shipped("imc10", &["aditya"], data!("imc10_yaps_aditya_packets.txt"), Ns2, P, Linear,
        "YAPS/pHost 'aditya' file (x1460 B), inferred to be pHost's IMC10 workload (not confirmed); mean 195 KB"),
];

/// Look a shipped CDF up by name or alias (ASCII case-insensitive).
pub fn find(name: &str) -> Option<&'static ShippedCdf> {
    SHIPPED.iter().find(|c| c.name.eq_ignore_ascii_case(name) || c.aliases.iter().any(|a| a.eq_ignore_ascii_case(name)))
}

/// Canonical names of the shipped CDFs.
pub fn names() -> Vec<&'static str> {
    SHIPPED.iter().map(|c| c.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::units::Bytes;

    /// The README's numbers for one file: name, mean read as linear, mean read as step
    /// (bytes), % of flows < 100 KB; `None` where the README gives no number.
    type ReadmeRow = (&'static str, Option<f64>, Option<f64>, Option<f64>);

    const README: &[ReadmeRow] = &[
        ("websearch", Some(1.711e6), Some(2.435e6), Some(54.2)),
        ("websearch_pias", Some(1.666e6), Some(2.370e6), Some(54.4)),
        ("datamining", Some(7.470e6), Some(13.82e6), Some(82.4)),
        ("datamining_xpass", Some(7.488e6), Some(13.83e6), Some(82.2)),
        ("webserver", Some(62.2e3), Some(62874.27), Some(81.5)),
        ("webserver_xpass", Some(66.1e3), Some(85.9e3), Some(80.9)),
        ("cachefollower", Some(686.9e3), Some(692975.6), Some(53.3)),
        ("cachefollower_xpass", Some(712.6e3), Some(802.9e3), Some(52.0)),
        ("hadoop", Some(120.4e3), Some(183.9e3), Some(88.5)),
        ("memcached_w1", None, Some(185.0), Some(100.0)),
        ("google_search_rpc", None, Some(440.8), Some(100.0)),
        ("google_all_rpc", None, Some(2927.0), Some(99.6)),
        ("hadoop_w4", Some(121.8e3), Some(127796.6), Some(88.7)),
        ("websearch_w5", Some(2.480e6), Some(2.516e6), Some(54.4)),
        ("uniform_pase", Some(100e3), None, None),
        ("uniform_d2tcp", Some(300e3), None, None),
        ("imc10", Some(195e3), None, Some(82.4)),
    ];

    #[test]
    fn every_shipped_cdf_is_in_the_readme_table_and_parses() {
        for c in SHIPPED {
            assert!(README.iter().any(|r| r.0 == c.name), "{} has no README row in this test", c.name);
            c.load(c.reading).unwrap_or_else(|e| panic!("{}: {e:?}", c.name));
        }
        assert_eq!(README.len(), SHIPPED.len());
        // Names and aliases are unique.
        let mut all: Vec<&str> =
            SHIPPED.iter().flat_map(|c| std::iter::once(c.name).chain(c.aliases.iter().copied())).collect();
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n);
    }

    #[test]
    fn computed_means_match_the_readme() {
        for &(name, lin, step, _) in README {
            let c = find(name).unwrap();
            for (reading, want) in [(Reading::Linear, lin), (Reading::Step, step)] {
                let Some(want) = want else { continue };
                let got = c.load(reading).unwrap().mean_bytes();
                let err = (got - want).abs() / want;
                assert!(err < 0.005, "{name} {reading:?}: mean {got:.1} B, README {want} B ({:.2}%)", err * 100.0);
            }
        }
    }

    #[test]
    fn homa_header_means_agree_with_the_computed_step_mean() {
        for c in SHIPPED.iter().filter(|c| c.format == CdfFormat::Homa) {
            let cdf = c.load(Reading::Step).unwrap();
            let declared = cdf.declared_mean().unwrap();
            let err = (cdf.mean_bytes() - declared).abs() / declared;
            assert!(err < 0.005, "{}: computed {:.1}, header {declared:.1}", c.name, cdf.mean_bytes());
        }
    }

    #[test]
    fn sampled_sizes_match_the_computed_distribution() {
        const N: usize = 200_000;
        for &(name, _, _, pct_small) in README {
            let shipped = find(name).unwrap();
            let cdf = shipped.load(shipped.reading).unwrap();
            let mut rng = Rng::new(0x5eed ^ name.len() as u64);
            let draws: Vec<u64> = (0..N).map(|_| cdf.sample(&mut rng).0).collect();
            assert!(draws.iter().all(|&s| s >= 1 && s <= cdf.max_bytes()), "{name}");
            let mean = cdf.mean_bytes();
            // Light-tailed enough that 200k draws pin the mean to well within 3%: the
            // standard error sqrt(var/N) is below 0.75% of the mean.
            let sd = (cdf.second_moment() - mean * mean).max(0.0).sqrt();
            if sd / (N as f64).sqrt() < 0.0075 * mean {
                let emp = draws.iter().map(|&s| s as f64).sum::<f64>() / N as f64;
                assert!((emp - mean).abs() / mean < 0.03, "{name}: sample mean {emp:.1} vs {mean:.1}");
            }
            // Every CDF (heavy tails included): the fraction of small flows.
            let below = draws.iter().filter(|&&s| s < 100_000).count() as f64 / N as f64 * 100.0;
            let exact = cdf.fraction_below(Bytes(100_000)) * 100.0;
            assert!((below - exact).abs() < 0.5, "{name}: {below:.2}% of draws < 100 KB, computed {exact:.2}%");
            if let Some(p) = pct_small {
                assert!((below - p).abs() < 1.5, "{name}: {below:.2}% of draws < 100 KB, README {p}%");
            }
        }
    }

    #[test]
    fn heavy_tailed_datamining_median_and_quantiles() {
        // PIAS VL2 file: 50% of flows are 1 packet (1460 B), 80% are at most 7 packets.
        let c = find("datamining").unwrap().load(Reading::Linear).unwrap();
        let mut rng = Rng::new(11);
        let mut d: Vec<u64> = (0..200_000).map(|_| c.sample(&mut rng).0).collect();
        d.sort_unstable();
        assert_eq!(d[d.len() / 2 - 1000], 1460);
        assert!(d[d.len() * 79 / 100] <= 7 * 1460);
    }

    #[test]
    fn lookup_by_alias_is_case_insensitive() {
        assert_eq!(find("W1").unwrap().name, "memcached_w1");
        assert_eq!(find("vl2").unwrap().name, "datamining");
        assert_eq!(find("WebSearch").unwrap().name, "websearch");
        assert!(find("websearh").is_none());
    }
}
