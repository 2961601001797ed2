// The GPU top reaching into the command line: refused too.
#include "models/l1/upward.hpp"
#include "sim/cli/command.hpp"
