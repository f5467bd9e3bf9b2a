"""pipesim from Python (our own package; no third-party code). See verify/python/README.md.

    import pipesim
    r = pipesim.check("scenarios/bugs/01_producer_phase_zero_broken.scn")        # a file, or scenario text
    r = pipesim.check("k.ptx", launch="k.launch.json", defines={"entry": "k_main", "param.K": 4096})
    r.verdict, r.predicted_us, [(g.waits_on, g.location) for g in r.hang_groups], r.finding_groups

pipesim.check runs the `pipesim` binary ($PIPESIM_BIN, else PATH) with --json (pipesim/binary.py says
why a wrapper and not bindings); pipesim.report holds the objects. pipesim.cute compiles a CuTe DSL
kernel with no GPU into the PTX and launch file that pipesim.check takes.
"""
from pipesim.binary import BadInput, PipesimError, binary, check, check_files
from pipesim.report import (BarrierState, Finding, FindingGroup, HangGroup, Location, Report, locations,
                            reports_of)

__all__ = ["BadInput", "BarrierState", "Finding", "FindingGroup", "HangGroup", "Location", "PipesimError",
           "Report", "binary", "check", "check_files", "locations", "reports_of"]
