"""The pipesim Python package (verify/python/pipesim) against the real binary ($PIPESIM_BIN).

Run by CTest (tests/CMakeLists.txt: python_pipesim_package) with PYTHONPATH=verify/python; no network.
"""
import os
import unittest

import pipesim

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PTX = os.path.join(ROOT, "tests", "data", "ptx")


def line_of(path: str, text: str) -> int:
    """1-based number of the first line of `path` that is `text` (so the test follows edits of the file)."""
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if line.split("#")[0].strip() == text:
                return n
    raise AssertionError(f"{text!r} not in {path}")


class ScenarioChecks(unittest.TestCase):
    def test_accumulator_producer_phase_zero_hangs_the_mma_warp_at_its_acquire(self):
        path = os.path.join(ROOT, "scenarios", "bugs", "01b_acc_producer_phase_zero_broken.scn")
        r = pipesim.check(path)
        self.assertEqual(r.verdict, "hang", r.text)
        self.assertEqual(r.expect, "hang")
        self.assertTrue(r.matches)
        mma = [g for g in r.hang_groups if g.waits_on.startswith("acc.empty[0]")]
        self.assertEqual(len(mma), 1, r.text)
        self.assertEqual(mma[0].role, "mma")
        self.assertEqual(mma[0].location.line, line_of(path, "acc.producer_acquire"))
        self.assertEqual(mma[0].state.phase, 0)  # nothing ever released it: it waits for phase 0 itself
        self.assertEqual(mma[0].state.pending, mma[0].state.expected)

    def test_scenario_text_with_defines_runs_and_predicts_a_time(self):
        text = """kernel tiny on sm_90a
let K = 4
launch ctas = 2, threads = 256
pipeline ab : tma -> threads, stages = 2, tx = 4096, consumers = 1 warpgroups

role producer warp 0:
  for k in 0 .. K:
    ab.producer_acquire
    tma ab bytes = 4096
  ab.producer_tail

role consumer warps 4..7:
  for k in 0 .. K:
    ab.consumer_wait
    compute 100 ns
    ab.consumer_release
expect ok
"""
        short = pipesim.check(text)
        longer = pipesim.check(text, defines={"K": 16})
        self.assertEqual((short.verdict, longer.verdict), ("ok", "ok"), short.text + longer.text)
        self.assertEqual(short.kernel, "tiny")
        self.assertEqual(longer.raw["params"]["K"], 16)
        self.assertGreater(longer.predicted_ns, short.predicted_ns)

    def test_bad_scenario_text_raises_with_its_line_and_column(self):
        with self.assertRaises(pipesim.BadInput) as caught:
            pipesim.check("kernel broken on sm_90a\nfoo\n")
        self.assertTrue(caught.exception.diagnostic.startswith("<text>:2:1: error:"), caught.exception.diagnostic)


class PtxChecks(unittest.TestCase):
    def test_accumulator_phase_zero_kernel_hangs_at_its_cuda_source_line(self):
        r = pipesim.check(os.path.join(PTX, "umma.ptx"), launch=os.path.join(PTX, "umma.launch.json"),
                          defines={"entry": "umma_acc_phase_zero"}, expect="hang")
        self.assertEqual((r.verdict, r.kernel, r.arch), ("hang", "umma_acc_phase_zero", "sm_100a"), r.text)
        self.assertTrue(r.matches)
        mma = [g for g in r.hang_groups if g.waits_on.startswith("acc_empty[0]")]
        self.assertEqual(len(mma), 1, r.text)
        self.assertEqual(mma[0].warps, [1])  # the MMA warp, in every CTA
        self.assertEqual(mma[0].ctas, [0, 1, 2, 3])
        # The innermost place is the wait helper; its caller is the MMA warp's acquire of the accumulator.
        cu = os.path.join(PTX, "umma.cu")
        inner, caller = mma[0].locations[:2]
        self.assertTrue(inner.file.endswith("umma.cu"))
        self.assertEqual(caller.line, line_of(cu, "wait(&acc_empty[acc.index], acc.phase);"))
        self.assertTrue(mma[0].where.endswith(".ptx:%d:2" % mma[0].raw["line"]))

    def test_ok_kernel_predicts_a_time_and_a_kernel_parameter_define_lengthens_it(self):
        launch = os.path.join(PTX, "umma.launch.json")
        r = pipesim.check(os.path.join(PTX, "umma.ptx"), launch=launch)
        more = pipesim.check(os.path.join(PTX, "umma.ptx"), launch=launch, defines={"param.1": 12})
        self.assertEqual((r.verdict, more.verdict), ("ok", "ok"), r.text + more.text)
        self.assertEqual(r.errors, [])
        self.assertGreater(r.predicted_us, 0)
        self.assertGreater(more.predicted_ns, r.predicted_ns)


class Errors(unittest.TestCase):
    def test_missing_binary_says_how_to_name_it(self):
        saved = os.environ.get("PIPESIM_BIN"), os.environ.get("PATH")
        try:
            os.environ["PIPESIM_BIN"] = "/nonexistent/pipesim"
            with self.assertRaisesRegex(pipesim.PipesimError, "PIPESIM_BIN=/nonexistent/pipesim is not an executable"):
                pipesim.check("kernel x on sm_90a\n")
            del os.environ["PIPESIM_BIN"]
            os.environ["PATH"] = "/nonexistent"
            with self.assertRaisesRegex(pipesim.PipesimError, "no pipesim binary: set PIPESIM_BIN"):
                pipesim.binary()
        finally:
            for name, value in zip(("PIPESIM_BIN", "PATH"), saved):
                if value is not None:
                    os.environ[name] = value

    def test_refused_command_line_is_an_error_with_pipesim_s_sentence(self):
        with self.assertRaisesRegex(pipesim.PipesimError, "--no-such-option"):
            pipesim.check(os.path.join(ROOT, "scenarios", "bugs", "01_producer_phase_zero_fixed.scn"),
                          args=["--no-such-option"])


if __name__ == "__main__":
    unittest.main()
