//===- Lowering.cpp - all lcc -> linalg patterns --------------------------===//
#include "dialects/lcc/lowering/Lowering.h"
#include "dialects/lcc/lowering/Utils.h"

namespace lcc {
void populateLccToLinalgPatterns(mlir::RewritePatternSet &patterns) {
  lowering::populateInitPatterns(patterns);
  lowering::populateElementwisePatterns(patterns);
  lowering::populateReductionPatterns(patterns);
  lowering::populateNnPatterns(patterns);
  lowering::populateShapePatterns(patterns);
  lowering::populateMatmulPatterns(patterns);
  lowering::populateScatterPatterns(patterns);
  lowering::populateCollectivePatterns(patterns);
}
} // namespace lcc
