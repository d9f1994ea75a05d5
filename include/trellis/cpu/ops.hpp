// The CPU reference kernels, all in one include.
#pragma once
#include "trellis/cpu/gate_up.hpp"
#include "trellis/cpu/linear.hpp"
#include "trellis/cpu/swiglu.hpp"
#include "trellis/cpu/threads.hpp"
#include "trellis/numerics.hpp"
