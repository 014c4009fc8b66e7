"""BlueDown's linear pass on one state partition (run by ``census.py --bluedown`` in its venv).

Usage: ``python _bluedown_linear.py CHECKOUT NMF_DIR STATE WORK_DIR SIZES STATE_TOTAL``

Runs, from the checkout of google-research/census-bluedown, the passes its
README runs per state (``main_passes.input_pass``, ``bottom_up_pass``) and the
linear top-down pass of the state's subtree (``top_down_pass`` with
``subtree_only=True``), for a histogram of axes ``SIZES`` (a JSON list, every
axis asymmetric: no compression). Then it applies the state total to the
state's estimate as BlueDown's root pass does (``constrain.apply_sum_constraint``),
and to the state only. Prints one JSON line: the passes' CPU seconds, and where
it wrote every unit's combined estimate and covariance (``WORK_DIR/estimates.npz``).
Imports only BlueDown's own requirements (its venv has no dpinfer).
"""

import json
import sys
import time

import numpy as np


def main(checkout, nmf_dir, state, work, sizes, total):
    sys.path.insert(0, checkout)
    from census_bluedown import block, constants, constrain, io, main_passes

    shape = tuple(json.loads(sizes))
    block_shape = block.BlockShape(shape=shape, num_asymmetric_features=len(shape))
    folder = constants.SUBTREE_FOLDER_PATTERN % state

    def nmf(suffix):
        return io.InputFormatIO(nmf_dir, folder, True, suffix)

    processed = io.ProcessingFormatIO(work, folder, read_only=False, split_estimates=True)
    start = time.process_time()
    main_passes.input_pass(
        nmf(constants.NMF_PATH_SUFFIX), nmf(constants.CONSTRAINT_PATH_SUFFIX), processed,
        block_shape, None,
    )  # fmt: skip
    main_passes.bottom_up_pass(processed, processed, block_shape)
    main_passes.top_down_pass(processed, processed, block_shape, subtree_only=True)
    passes = time.process_time() - start
    top = constants.LEVELS[0]
    root = processed.read(top, constants.LOWER_EST_FNAME)
    constrained = constrain.apply_sum_constraint(block_shape, root["estimate"][0], int(total))
    out = {"geocode": [], "value": [], "cov": [], "constrained_state": constrained.val}
    for level in constants.LEVELS:
        name = constants.LOWER_EST_FNAME if level == top else constants.COMBINED_EST_FNAME
        frame = processed.read(level, name)
        out["geocode"] += frame["geocode"].tolist()
        out["value"] += [e.val for e in frame["estimate"]]
        out["cov"] += [e.cov for e in frame["estimate"]]
    np.savez(
        f"{work}/estimates.npz",
        geocode=np.array(out["geocode"]),
        value=np.array(out["value"]),
        cov=np.array(out["cov"]),
        constrained_state=out["constrained_state"],
    )
    print(json.dumps({"passes_cpu_s": passes, "estimates": f"{work}/estimates.npz"}))


if __name__ == "__main__":
    if len(sys.argv) == 7:
        main(*sys.argv[1:])
    else:  # run bare (as make bench runs every script): a helper, nothing to measure alone
        print(
            "a helper of census.py --bluedown; usage: "
            + __doc__.split("Usage: ")[1].split("\n")[0]
        )
