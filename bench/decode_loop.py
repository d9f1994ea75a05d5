"""What bench/sass_loop_stats.py (cuobjdump's text) and bench/cubin_loops.py
(the cubin's bytes) share: which loop of a kernel is its decode loop, and how
many weights one pass of it decodes.

The decode loop is the innermost loop (the shortest backward-branch span) that
holds tensor-core MMAs, or where no loop does (a CUDA-core form) the innermost
one that holds an IDP4A, one per decoded weight. Per
lane, an m16n8k16 HMMA consumes 8 decoded weights (16 x 16 of the warp), an
m16n8k32 IMMA 4 (16 x 8 weights, four hash bytes each) and a wgmma m64n8k32
also 4 (its A fragment is the same four hash words per lane: wgmma_axis1.cu),
however the compiler unrolled or split the loop. The MMA span, first to last
MMA of the loop, is the per-weight work without the loop's loads, bookkeeping
and rarely taken per-tile epilogue.
"""


def innermost_loop(back_branches, holds_marker):
    """The shortest (first, last) of back_branches (loop head, backward branch)
    for which holds_marker(first, last) is true; None if there is none."""
    best = None
    for first, last in back_branches:
        if holds_marker(first, last) and (best is None or last - first < best[1] - best[0]):
            best = (first, last)
    return best


def decode_loop_span(back_branches, holds_mma, holds_idp4a):
    """The decode loop: the innermost loop holding an MMA, else (a CUDA-core
    form) the innermost one holding an IDP4A; None if neither."""
    return innermost_loop(back_branches, holds_mma) or innermost_loop(back_branches, holds_idp4a)


def weights_per_lane(hmma=0, imma=0, wgmma=0, idp4a=0):
    """Decoded weights per lane in one pass of a loop with these instruction
    counts: the MMAs' weights, or for a loop without MMAs one per IDP4A."""
    return 8 * hmma + 4 * (imma + wgmma) or idp4a


def mma_span(is_mma):
    """(first, last) index of the MMAs in a loop body given as booleans; None without one."""
    at = [i for i, m in enumerate(is_mma) if m]
    return (at[0], at[-1]) if at else None
