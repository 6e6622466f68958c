"""The validation suite's references (dcnsim.theory) against independent truths, and the
reduced suite itself: every reduced check passes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dcnsim import theory, validation
from dcnsim.cli import main


def test_fluid_ps_two_jobs_by_hand():
    # Rate 1. Job A (size 2) at t=0, job B (size 1) at t=1. A alone until 1 (1 left); then
    # both at rate 1/2, each needing 1 more: both finish at 1 + 2 = 3.
    done = theory.fluid_ps([0.0, 1.0], [2.0, 1.0], 1.0)
    assert done.tolist() == pytest.approx([3.0, 3.0])
    done = theory.fluid_ps([0.0, 1.0], [3.0, 1.0], 1.0)
    # A has 2 left at t=1; B done at 3 (A has 1 left), A alone to 4.
    assert done.tolist() == pytest.approx([4.0, 3.0])


def test_fluid_srpt_two_jobs_by_hand():
    # A (size 3) at 0, B (size 1) at 1: B preempts (1 < 2 left), done at 2; A done at 4.
    assert theory.fluid_srpt([0.0, 1.0], [3.0, 1.0], 1.0).tolist() == pytest.approx([4.0, 2.0])
    # B (size 3) at 1 does not preempt A (2 left): A done at 3, B at 6.
    assert theory.fluid_srpt([0.0, 1.0], [3.0, 3.0], 1.0).tolist() == pytest.approx([3.0, 6.0])


def _poisson(rho: float, n: int, sizes: np.ndarray, seed: int) -> tuple[np.ndarray, float]:
    rng = np.random.default_rng(seed)
    lam = rho / sizes.mean()
    return np.cumsum(rng.exponential(1 / lam, n)), lam


def test_fluid_ps_agrees_with_mg1_ps_over_many_jobs():
    rng = np.random.default_rng(7)
    s = rng.uniform(0.1, 1.0, 200_000)
    a, _ = _poisson(0.6, len(s), s, 8)
    sd = (theory.fluid_ps(a, s, 1.0) - a) / s
    assert np.mean(sd) == pytest.approx(theory.mg1_ps_slowdown(0.6), rel=0.03)


def test_schrage_miller_agrees_with_fluid_srpt_over_many_jobs():
    rng = np.random.default_rng(3)
    s = rng.uniform(0.1, 1.0, 200_000)
    a, lam = _poisson(0.7, len(s), s, 4)
    t = theory.fluid_srpt(a, s, 1.0) - a
    dist = theory.SizeDistribution(np.linspace(0.1, 1.0, 1001))
    for lo, hi in [(0.1, 0.3), (0.45, 0.55), (0.8, 1.0)]:
        sel = (s >= lo) & (s < hi)
        formula = np.mean([theory.mg1_srpt_response(x, dist, lam, 1.0) for x in s[sel][:400]])
        sim = np.mean(t[sel])
        assert sim == pytest.approx(formula, rel=0.05), (lo, hi)


def test_schrage_miller_at_light_load_is_the_service_time():
    dist = theory.SizeDistribution([1.0, 2.0, 3.0])
    assert theory.mg1_srpt_response(2.0, dist, 1e-9, 1.0) == pytest.approx(2.0, rel=1e-6)


def test_fluid_mlfq_two_jobs_by_hand():
    # Threshold 1, rate 1. A (size 3) at 0 is served alone in class 1 until t=1, then in class 2
    # until 1.5 (1.5 served, 1.5 left). B (size 2) arrives at 1.5 in class 1 and preempts A;
    # B's first byte takes it to 2.5, then B is in class 2 with A. PS in class 2: A 1.5 left,
    # B 1 left, each at 1/2: B done at 2.5 + 2 = 4.5, A (0.5 left) at 5. FCFS in class 2: A
    # entered class 2 at t=1, so it goes first: done at 2.5 + 1.5 = 4, B at 5.
    ps = theory.fluid_mlfq([0.0, 1.5], [3.0, 2.0], 1.0, [1.0], "ps")
    assert ps.tolist() == pytest.approx([5.0, 4.5])
    fcfs = theory.fluid_mlfq([0.0, 1.5], [3.0, 2.0], 1.0, [1.0], "fcfs")
    assert fcfs.tolist() == pytest.approx([4.0, 5.0])


def test_fluid_mlfq_without_thresholds_is_ps_or_fcfs():
    rng = np.random.default_rng(5)
    s = rng.uniform(0.1, 1.0, 3000)
    a, _ = _poisson(0.7, len(s), s, 6)
    ps = theory.fluid_mlfq(a, s, 1.0, [], "ps")
    assert np.max(np.abs(ps - theory.fluid_ps(a, s, 1.0))) < 1e-9
    fcfs = theory.fluid_mlfq(a, s, 1.0, [], "fcfs")
    # FCFS by the Lindley recursion: each job starts when it arrives or the previous ends.
    end = np.empty_like(a)
    t = 0.0
    for i in range(len(a)):
        t = max(t, a[i]) + s[i]
        end[i] = t
    assert np.max(np.abs(fcfs - end)) < 1e-9


def test_mlfq_model_one_class_is_pollaczek_khinchine():
    dist = theory.SizeDistribution([1.0, 2.0, 3.0])
    lam = 0.2
    es2 = (1 + 4 + 9) / 3
    rho = lam * 2.0
    for x in (1.0, 2.0, 3.0):
        t = theory.mlfq_response(x, dist, lam, 1.0, [])
        assert t == pytest.approx(x + lam * es2 / (2 * (1 - rho)), rel=1e-12)
    assert theory.mlfq_response(2.0, dist, 1e-9, 1.0, [1.5]) == pytest.approx(2.0, rel=1e-6)


def test_mlfq_model_agrees_with_fluid_mlfq_fcfs_over_many_jobs():
    rng = np.random.default_rng(3)
    s = rng.uniform(0.1, 1.0, 30_000)
    a, lam = _poisson(0.7, len(s), s, 4)
    th = [0.3, 0.6]
    t = theory.fluid_mlfq(a, s, 1.0, th, "fcfs") - a
    dist = theory.SizeDistribution(np.linspace(0.1, 1.0, 1001))
    for lo, hi in [(0.1, 0.3), (0.3, 0.6), (0.6, 1.0)]:
        sel = (s > lo) & (s <= hi)
        formula = np.mean([theory.mlfq_response(x, dist, lam, 1.0, th) for x in s[sel][:300]])
        assert np.mean(t[sel]) == pytest.approx(formula, rel=0.05), (lo, hi)


def test_incast_bound_by_hand():
    # 10 packets of 1500 B = 15,000 B per burst; 60 KB buffer: 4 x 15,000 = 60,000 fits,
    # 5 x 15,000 does not -> 6 senders.
    assert theory.incast_first_loss_senders(15_000, 60_000) == 6
    assert theory.incast_peak_queue(6, 15_000) == 75_000


def test_ideal_fct_by_hand_matches_a_direct_count():
    # One packet of 1 B payload (41 B wire) over 2 links at 10 Gbps, 1 us each:
    # 2 x (41 x 8 / 1e10 + 1e-6) s.
    assert validation.ideal_fct_equal_rates(1, 1500, 2, 10e9, 1e-6) == pytest.approx(
        2 * (41 * 8 / 1e10 + 1e-6), rel=1e-12
    )


def test_reduced_suite_passes():
    checks = validation.run_suite(reduced=True)
    assert len(checks) >= 8
    failed = [(c.name, c.ours) for c in checks if c.status == "FAIL"]
    assert not failed, failed
    text = validation.report(checks, reduced=True)
    assert text.startswith(validation.REPORT_TITLE)
    assert all(math.isfinite(c.detail["wall_s"]) for c in checks)


def test_validate_model_refuses_to_overwrite_a_file_it_did_not_write(tmp_path, capsys):
    f = tmp_path / "notes.md"
    f.write_text("my notes\n")
    assert main(["validate-model", "--reduced", "--quiet", "--out", str(f)]) == 2
    assert f.read_text() == "my notes\n"
    assert "not written by dcnsim" in capsys.readouterr().err
