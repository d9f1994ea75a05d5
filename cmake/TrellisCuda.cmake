# trellis_cuda_library(NAME SOURCES...): a static library of CUDA (and C++)
# sources, compiled for sm_90a (Hopper instructions allowed) and, with
# TRELLIS_CUDA_PORTABLE (the default), for sm_80: the portable path whose SASS
# runs on every sm_80..sm_89 GPU. No PTX is embedded: it would add a third
# compile of every kernel to a CI build that runs on two cores. Kernel
# experiments on an H200 may turn the portable path off to halve compile time.
#
# The .cu files are C++17: CMake 3.25 (Debian 12) knows no C++20 dialect for
# nvcc and would otherwise inherit CXX_STANDARD 20 and refuse to generate.
option(TRELLIS_CUDA_PORTABLE "Also compile the CUDA kernels for sm_80 (the portable path)" ON)

set(TRELLIS_CUDA_GENCODE -gencode=arch=compute_90a,code=sm_90a)
set(TRELLIS_CUDA_TARGETS "sm_90a")
if(TRELLIS_CUDA_PORTABLE)
  list(APPEND TRELLIS_CUDA_GENCODE -gencode=arch=compute_80,code=sm_80)
  string(APPEND TRELLIS_CUDA_TARGETS " + sm_80")
endif()

function(trellis_cuda_library name)
  add_library(${name} STATIC ${ARGN})
  set_target_properties(${name} PROPERTIES CUDA_ARCHITECTURES OFF CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON
                                           POSITION_INDEPENDENT_CODE ON)
  target_compile_options(${name} PRIVATE
    "$<$<COMPILE_LANGUAGE:CUDA>:${TRELLIS_CUDA_GENCODE};-Xptxas=-warn-spills>")
endfunction()
