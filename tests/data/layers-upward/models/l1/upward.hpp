// A model that reaches up into the GPU top: check_layers.sh must refuse it.
#pragma once
#include "sim/engine/port.hpp"
#include "sim/gpu.hpp"
