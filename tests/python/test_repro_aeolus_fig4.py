"""Reduced variant of repro/aeolus_fig4_hypothetical_homa (Aeolus Fig. 4 and 1(b)).

The paper's claim, a small-flow tail about 1000x lower with the idealised first RTT, is not
reproduced by our model (the README gives the measurements): with the paper's 200 KB ports
our Homa's timeouts come from scheduled packets overflowing receiver downlinks by
themselves (six overcommitted messages' grants exceed the buffer), which keeping
unscheduled packets out of the way cannot remove. What is asserted is what the construction
implies: with ports that hold a receiver's grants (400 KB) the idealised Homa recovers every
displaced first-RTT packet without a timeout; with 200 KB both it and Homa still time out;
and its small flows pay for never delaying scheduled data with a slower median.
"""

from __future__ import annotations

from pathlib import Path

from dcnsim.repro import run_repro

REPO = Path(__file__).resolve().parents[2]


def test_aeolus_fig4_reduced_idealised_first_rtt_recovers_displaced_packets_without_timeouts(
    tmp_path: Path,
) -> None:
    name = "aeolus_fig4_hypothetical_homa"
    res = run_repro(REPO / "repro" / name, tmp_path / name, reduced=True, workers=1)
    assert not res.report.failed, [f.error for f in res.report.failed]
    runs = {(r["variant"], r["workload[0].cdf"], r["network.buffer"]): r for r in res.report.rows}
    assert len(runs) == 12
    assert all(r["flows_unfinished"] == 0 for r in runs.values())
    for cdf in ("webserver", "cachefollower"):
        homa200, homa400 = runs[("homa", cdf, "200KB")], runs[("homa", cdf, "400KB")]
        ideal200, ideal400 = runs[("homa_ideal", cdf, "200KB")], runs[("homa_ideal", cdf, "400KB")]
        # 400 KB: scheduled packets displace first-RTT ones (push-out), and every displaced
        # or stuck packet is resent as scheduled data, with no timeout.
        assert ideal400["drops_pushout"] > 0, cdf
        assert ideal400["flows_with_timeout"] == 0, cdf
        # Homa's losses at 200 KB are (almost) all gone at 400 KB: they are grants beyond
        # the buffer, not first-RTT bursts.
        assert homa200["flows_with_timeout"] > 0, cdf
        assert homa400["drops_total"] * 10 <= homa200["drops_total"], cdf
        # So at 200 KB the idealised first RTT still leaves timeouts (the gap to the paper).
        assert ideal200["flows_with_timeout"] > 0, cdf
        # The price of never delaying scheduled data: first-RTT packets wait for spare
        # capacity or are sent again, so the median small flow is slower than under Homa.
        for buf in ("200KB", "400KB"):
            ideal, homa = runs[("homa_ideal", cdf, buf)], runs[("homa", cdf, buf)]
            assert ideal["small_p50_fct_us"] > homa["small_p50_fct_us"], (cdf, buf)
