// Test helpers for model directories: the format tests' helpers (a
// self-removing temporary directory, owned tensors written with
// format::write_safetensors, files written whole, and expect_error for a call
// that must throw trellis::Error mentioning given words).
#pragma once
#include "../format/test_files.hpp"
