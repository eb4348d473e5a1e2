// dynstage: everything, the LLVM backend (dyn::jit) included.
#pragma once

#include "core.hpp"
