#include "sim/engine/evaluation_workers.hpp"

#include <memory>

namespace atomsim::detail {

EvaluationWorkers& evaluation_workers(unsigned threads) {
  static std::unique_ptr<EvaluationWorkers> workers;
  if (!workers || workers->threads() != threads) {
    workers.reset();
    workers = std::make_unique<EvaluationWorkers>(threads - 1);
  }
  return *workers;
}

}  // namespace atomsim::detail
