#!/usr/bin/env python3
"""Inserts the phase marks of phase_probe.cuh into the working tree's
wgmma_axis1.cu, mma_axis1.cu, imma_axis0.cu and stage_bytes.cuh (run.sh
restores them).

Marks (clock64 unless noted):
  wgmma_axis1 (per warpgroup, lane 0 of its first warp): [0] %globaltimer at
    entry, [1] entry, [2] after the programmatic wait (the first chunk's code
    words issued before it), [3] after staging x, [4] after the first chunk,
    [5] cycles spent in tile flushes (wait_group 0 to the outputs written),
    [6] exit, [7] %globaltimer at exit.
  mma_axis1 (per warp, lane 0): the wgmma_axis1 marks, a unit being a warp
    (its stage marks are those of threads 128·i of its block: the fp16 form
    does not stage through stage_bytes_block, so its s.* columns are stale).
  imma_axis0 (per block, thread 0): [0] %globaltimer, [1] entry, [2] after the
    wait, [3] after staging, [4] warp 0's slab loop done, [5] block sums in
    real units done, [6] exit (after the segment sum in the last block),
    [7] %globaltimer.
  stage_bytes_block (threads 128·i): x's first group arrived (relative to the
    wait mark), the max reduced, x converted and stored, the sum reduced.
Each edit must match exactly once, so a changed kernel fails loudly here.
"""
import pathlib
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
d = root / "src/cuda/trellis"


def edit(name, pairs):
    p = d / name
    s = p.read_text()
    for old, new in pairs:
        if s.count(old) != 1:
            sys.exit(f"instrument.py: {name}: expected one match of:\n{old}")
        s = s.replace(old, new)
    p.write_text(s)


def chunk_walk_marks(unit, prober, after_loop):
    """The chunk walk's marks, alike in both axis-1 kernels: the first chunk's
    end, the cycles in tile flushes, and the unit's record (g_phase[unit],
    g_extra[unit]) when the walk ends, just before `after_loop`."""
    record = """  if (prober) {
    unsigned long long* r = probe::g_phase[UNIT];
    r[0] = pe_gt, r[1] = pe_clk, r[2] = pw_clk, r[3] = ps_clk, r[4] = p1_clk, r[5] = pflush, r[6] = probe::clk(),
    r[7] = probe::gtime();
    unsigned long long* e = probe::g_extra[UNIT];
    e[0] = probe::smid(), e[1] = c_end - c_beg, e[2] = nflush, e[3] = blockIdx.x;
  }
""".replace("UNIT", unit)
    return [
        ("""  if (c_beg >= c_end) return;""", """  const unsigned long long ps_clk = probe::clk();
  unsigned long long p1_clk = 0, pflush = 0, nflush = 0;
  const bool prober = PROBER;
  if (c_beg >= c_end) return;""".replace("PROBER", prober)),
        ("""    if (nrem != 0 && c + 1 < c_end) {
      tile = ntile, rem = nrem;
      continue;
    }
""", """    if (c == c_beg) p1_clk = probe::clk();
    if (nrem != 0 && c + 1 < c_end) {
      tile = ntile, rem = nrem;
      continue;
    }
    const unsigned long long pf0 = probe::clk();
    ++nflush;
"""),
        ("""    tile = ntile, rem = nrem;
  }
""" + after_loop, """    pflush += probe::clk() - pf0;
    tile = ntile, rem = nrem;
  }
""" + record + after_loop),
    ]


edit("stage_bytes.cuh", [
    ('#include "stage_smem.cuh"\n', '#include "stage_smem.cuh"\n#include "phase_probe.cuh"\n'),
    ("""  for (int j = first + per_row; j < end; j += per_row) take_max(j, load_raw(s, m, j, vec));
""", """  for (int j = first + per_row; j < end; j += per_row) take_max(j, load_raw(s, m, j, vec));
  if (amax < -1.0f) amax = 0.0f;  // keeps the mark after amax's value
  probe::stage_mark(0);
"""),
    ("""  amax = reduce_row<true>(amax, s.M, scratch, 0);
""", """  amax = reduce_row<true>(amax, s.M, scratch, 0);
  probe::stage_mark(1);
"""),
    ("""  sum = reduce_row<false>(sum, s.M, scratch, 1);""", """  probe::stage_mark(2);
  sum = reduce_row<false>(sum, s.M, scratch, 1);"""),
    ("""  if (first == 0) info_sum[m] = sum;
  __syncthreads();""", """  if (first == 0) info_sum[m] = sum;
  __syncthreads();
  probe::stage_mark(3);"""),
])

edit("wgmma_axis1.cu", [
    ('#include "swiglu.cuh"\n', '#include "swiglu.cuh"\n#include "phase_probe.cuh"\n'),
    ("""  allow_dependent_grids();
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint4 smem[];""", """  allow_dependent_grids();
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  const unsigned long long pe_gt = probe::gtime(), pe_clk = probe::clk();
  extern __shared__ uint4 smem[];"""),
    ("""  wait_for_prerequisite_grids();
  // A scale is read at M = 1 only""", """  wait_for_prerequisite_grids();
  const unsigned long long pw_clk = probe::clk();
  // A scale is read at M = 1 only"""),
    *chunk_walk_marks("grp", "wq == 0 && lane == 0 && grp < probe::kMaxUnits", "#else"),
    ("""  f(a, plan.blocks, plan.smem_bytes, stream);
}""", """  f(a, plan.blocks, plan.smem_bytes, stream);
  probe::collect("wgmma p" + std::to_string(nproj) + " " + std::to_string(w[0].geom.rows) + "x" +
                     std::to_string(w[0].geom.cols) + " k" + std::to_string(k0) + " M" + std::to_string(M) + " g" +
                     std::to_string(plan.groups),
                 std::min(plan.groups, probe::kMaxUnits), stream, {"wait", "stage", "chunk1", "flush", "total", "loopend"},
                 {{1, 2}, {2, 3}, {3, 4}, {5, -1}, {1, 6}, {3, 6}}, 4, [](int u) { return u; });
}"""),
])

edit("imma_axis0.cu", [
    ('#include "stage_bytes.cuh"\n', '#include "stage_bytes.cuh"\n#include "phase_probe.cuh"\n'),
    ("""  allow_dependent_grids();
  extern __shared__ int block_sums[];""", """  allow_dependent_grids();
  const unsigned long long pe_gt = probe::gtime(), pe_clk = probe::clk();
  extern __shared__ int block_sums[];"""),
    ("""  wait_for_prerequisite_grids();
  for (int i""", """  wait_for_prerequisite_grids();
  const unsigned long long pw_clk = probe::clk();
  for (int i"""),
    ("""  int acc[16][4];""", """  const unsigned long long ps_clk = probe::clk();
  int acc[16][4];"""),
    ("""  // acc[t][e]: column 32g""", """  const unsigned long long pl_clk = probe::clk();
  // acc[t][e]: column 32g"""),
    ("""  finish_segments(values, M, C, cb * kBlockT, seg, a.segments, a.partials, a.counters + cb, a.out, a.residual);
}""", """  const unsigned long long pb_clk = probe::clk();
  finish_segments(values, M, C, cb * kBlockT, seg, a.segments, a.partials, a.counters + cb, a.out, a.residual);
  const int unit = int(blockIdx.y * gridDim.x + blockIdx.x);
  if (threadIdx.x == 0 && unit < probe::kMaxUnits) {
    unsigned long long* r = probe::g_phase[unit];
    r[0] = pe_gt, r[1] = pe_clk, r[2] = pw_clk, r[3] = ps_clk, r[4] = pl_clk, r[5] = pb_clk, r[6] = probe::clk(),
    r[7] = probe::gtime();
    unsigned long long* e = probe::g_extra[unit];
    e[0] = probe::smid(), e[1] = send - sbeg, e[2] = 0, e[3] = cb * 1000 + seg;
  }
}"""),
    ("""  f(a, dim3(plan.split.col_tiles, plan.split.segments), plan.smem_bytes, stream);
}""", """  f(a, dim3(plan.split.col_tiles, plan.split.segments), plan.smem_bytes, stream);
  probe::collect("axis0 imma " + std::to_string(w.geom.rows) + "x" + std::to_string(w.geom.cols) + " k" +
                     std::to_string(k) + " M" + std::to_string(M) + " b" + std::to_string(plan.split.col_tiles * plan.split.segments),
                 std::min(plan.split.col_tiles * plan.split.segments, probe::kMaxUnits), stream, {"wait", "stage", "loop", "bsum", "tail", "total"},
                 {{1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}, {1, 6}}, 2, [](int u) { return u * 5; });
}"""),
])
edit("mma_axis1.cu", [
    ('#include "swiglu.cuh"\n', '#include "swiglu.cuh"\n#include "phase_probe.cuh"\n'),
    ("""  allow_dependent_grids();
  using Acc = std::conditional_t<kInt, int, float>;""", """  allow_dependent_grids();
  const unsigned long long pe_gt = probe::gtime(), pe_clk = probe::clk();
  using Acc = std::conditional_t<kInt, int, float>;"""),
    ("""  wait_for_prerequisite_grids();
  // Lane (g, q) reads operand row g""", """  wait_for_prerequisite_grids();
  const unsigned long long pw_clk = probe::clk();
  // Lane (g, q) reads operand row g"""),
    *chunk_walk_marks("w", "lane == 0 && w < probe::kMaxUnits", "}\n"),
    ("""  f(a, plan.blocks, plan.smem_bytes, stream);
}""", """  f(a, plan.blocks, plan.smem_bytes, stream);
  probe::collect(std::string(plan.byte_operands ? "mma1 imma" : "mma1 fp16") + " p" + std::to_string(nproj) + " " +
                     std::to_string(w[0].geom.rows) + "x" + std::to_string(w[0].geom.cols) + " k" + std::to_string(k0) +
                     " M" + std::to_string(M) + " w" + std::to_string(plan.warps),
                 std::min(plan.warps, probe::kMaxUnits), stream, {"wait", "stage", "chunk1", "flush", "total", "loopend"},
                 {{1, 2}, {2, 3}, {3, 4}, {5, -1}, {1, 6}, {3, 6}}, 4,
                 [](int u) { return (u / kAxis1Warps) * 5 + (u % kAxis1Warps) / 4; });
}"""),
])
(d / "phase_probe.cuh").write_text((pathlib.Path(__file__).parent / "phase_probe.cuh").read_text())
