#include "dialects/lcc/lowering/Lowering.h"
namespace lcc {
void populateLccToLinalgPatterns(mlir::RewritePatternSet &) {}
} // namespace lcc
