//===- GemmToLibrary.cpp - matmul loop nests become BLAS calls -------------===//
//
// lcc lowers every matmul to one linalg.generic (batch dimensions, transposes
// and broadcasts folded into its indexing maps). On the CPU, naive loops over
// it run at a few GFLOP/s; a tuned BLAS runs at tens. After bufferization this
// pass recognizes generics of the form
//   C[b..., m, n] += A[..] * B[..]   (one reduction dim k; A over {b, m, k},
//                                     B over {b, k, n}, f32 or f64)
// and replaces each by a call to the runtime's `lcc_sgemm` / `lcc_dgemm`
// (runtime/cpu/CpuKernels.h), passing base pointers, offsets and the stride of
// every logical dimension (0 for a broadcast one). The runtime picks the BLAS
// transpose flags from the strides and falls back to plain loops for
// layouts BLAS cannot express, so every match is safe to replace.
//
//===----------------------------------------------------------------------===//
#include "passes/kernels/Passes.h"
#include "runtime/cuda/kernels/FlashParams.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Matchers.h"

namespace lcc {
#define GEN_PASS_DEF_LCCGEMMTOLIBRARYPASS
#include "passes/kernels/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {

constexpr unsigned kMaxBatchDims = 3;

/// The logical roles of a matmul-like generic's loop dimensions.
struct GemmDims {
  unsigned m, n, k;
  SmallVector<unsigned> batch; // outer output dims, in output order
};

/// The loop dims an operand's map reads, or nothing when the map is not a
/// plain projected permutation.
std::optional<SmallVector<unsigned>> mapDims(AffineMap map) {
  if (!map.isProjectedPermutation(/*allowZeroInResults=*/false))
    return std::nullopt;
  SmallVector<unsigned> dims;
  for (AffineExpr e : map.getResults())
    dims.push_back(llvm::cast<AffineDimExpr>(e).getPosition());
  return dims;
}

/// out = out + a * b (either order of the operands of + and *); with
/// `widened`, a and b are bf16 or f16 arguments each extended to f32 first (a
/// half-precision matmul accumulating in f32, as lcc lowers it).
bool isMulAddBody(linalg::GenericOp op, bool widened) {
  Block &body = op.getRegion().front();
  if (body.getNumArguments() != 3 || body.getOperations().size() != (widened ? 5u : 3u))
    return false;
  auto yield = llvm::cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add)
    return false;
  Value c = body.getArgument(2);
  auto operand = [&](Value v, unsigned arg) {
    if (!widened)
      return v == body.getArgument(arg);
    auto ext = v.getDefiningOp<arith::ExtFOp>();
    return ext && ext.getIn() == body.getArgument(arg);
  };
  auto isMul = [&](Value v) {
    auto mul = v.getDefiningOp<arith::MulFOp>();
    return mul && ((operand(mul.getLhs(), 0) && operand(mul.getRhs(), 1)) ||
                   (operand(mul.getLhs(), 1) && operand(mul.getRhs(), 0)));
  };
  return (add.getLhs() == c && isMul(add.getRhs())) || (add.getRhs() == c && isMul(add.getLhs()));
}

/// The GEMM `op` is, or why it is not one (`why`, for lcc-gemm-to-library's
/// `explain`).
std::optional<GemmDims> matchGemm(linalg::GenericOp op, std::string &why) {
  auto no = [&](const char *reason) -> std::optional<GemmDims> {
    why = reason;
    return std::nullopt;
  };
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1)
    return no("it does not read two buffers into one");
  Type elem = llvm::cast<MemRefType>(op.getDpsInits()[0].getType()).getElementType();
  if (!elem.isF32() && !elem.isF64())
    return no("its result is neither f32 nor f64");
  // f32/f64 throughout, or bf16/f16 operands into an f32 accumulator.
  Type in = llvm::cast<MemRefType>(op->getOperand(0).getType()).getElementType();
  bool widened = (in.isBF16() || in.isF16()) && elem.isF32();
  if (in != elem && !widened)
    return no("its operand and result types are not f32/f64 throughout or bf16/f16 into f32");
  if (llvm::cast<MemRefType>(op->getOperand(1).getType()).getElementType() != in)
    return no("its two operands have different element types");
  if (!isMulAddBody(op, widened))
    return no("its body is not exactly out + a * b (something was fused into it)");
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  if (llvm::count(iters, utils::IteratorType::reduction) != 1)
    return no("it reduces over more than one dimension");
  auto maps = op.getIndexingMapsArray();
  auto aDims = mapDims(maps[0]), bDims = mapDims(maps[1]), cDims = mapDims(maps[2]);
  if (!aDims || !bDims || !cDims)
    return no("an operand's indexing map is not a projected permutation");
  if (cDims->size() < 2)
    return no("its result has fewer than two dimensions (a matrix-vector product)");
  GemmDims g;
  g.k = unsigned(llvm::find(iters, utils::IteratorType::reduction) - iters.begin());
  if (cDims->size() != iters.size() - 1)
    return no("a parallel dimension does not index the result");
  g.m = (*cDims)[cDims->size() - 2];
  g.n = (*cDims)[cDims->size() - 1];
  g.batch.assign(cDims->begin(), cDims->end() - 2);
  auto has = [](const SmallVector<unsigned> &v, unsigned d) { return llvm::is_contained(v, d); };
  if (!has(*aDims, g.k) || !has(*bDims, g.k) || !has(*aDims, g.m) || has(*bDims, g.m) ||
      !has(*bDims, g.n) || has(*aDims, g.n))
    return no("its dimensions are not those of A[m, k] B[k, n] (batched or transposed)");
  if (g.batch.size() > kMaxBatchDims)
    return no("it has more than 3 batch dimensions");
  return g;
}

/// Declares `name(i64 x count)` in the module once; null (after an error)
/// when the name is taken by something else.
func::FuncOp declareKernel(ModuleOp module, StringRef name, unsigned count) {
  if (Operation *existing = module.lookupSymbol(name)) {
    auto f = llvm::dyn_cast<func::FuncOp>(existing);
    SmallVector<Type> want(count, IntegerType::get(module.getContext(), 64));
    if (f && f.getFunctionType().getInputs() == ArrayRef<Type>(want) &&
        f.getFunctionType().getNumResults() == 0)
      return f;
    existing->emitError() << "lcc-gemm-to-library: @" << name
                          << " is defined with another signature; expected " << count
                          << " i64 arguments and no result (runtime/cpu/CpuKernels.h)";
    return nullptr;
  }
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  SmallVector<Type> args(count, b.getI64Type());
  auto f = func::FuncOp::create(b, module.getLoc(), name, b.getFunctionType(args, {}));
  f.setPrivate();
  return f;
}

/// The zero fill of the GEMM's output right before it, when nothing in
/// between may touch memory (only views, casts, constants): the GEMM can
/// then overwrite C (beta 0) and the fill goes. lcc-clone-fills gives every
/// accumulator its own fill, placed right before its user.
linalg::FillOp freshZeroFill(linalg::GenericOp op) {
  Value c = op.getDpsInits()[0];
  for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode()) {
    if (auto fill = llvm::dyn_cast<linalg::FillOp>(prev)) {
      if (fill.getOutputs()[0] != c)
        return nullptr;
      return matchPattern(fill.getInputs()[0], m_PosZeroFloat()) ? fill : nullptr;
    }
    if (!isMemoryEffectFree(prev))
      return nullptr;
  }
  return nullptr;
}

LogicalResult replaceWithCall(linalg::GenericOp op, const GemmDims &g, ModuleOp module,
                              StringRef prefix) {
  bool f32 = llvm::cast<MemRefType>(op->getOperand(2).getType()).getElementType().isF32();
  Type in = llvm::cast<MemRefType>(op->getOperand(0).getType()).getElementType();
  StringRef kind = in.isBF16() ? "bf16gemm" : in.isF16() ? "hgemm" : f32 ? "sgemm" : "dgemm";
  func::FuncOp callee = declareKernel(module, (prefix + kind).str(), 28);
  if (!callee)
    return failure();
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto i64 = [&](Value index) -> Value {
    return arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
  };
  auto constant = [&](int64_t v) -> Value { return arith::ConstantIntOp::create(b, loc, v, 64); };
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<Value> args;
  // Batch sizes, outermost first, padded with 1 to kMaxBatchDims.
  for (unsigned i = 0; i < kMaxBatchDims; ++i)
    args.push_back(constant(i < g.batch.size() ? ranges[g.batch[i]] : 1));
  args.append({constant(ranges[g.m]), constant(ranges[g.n]), constant(ranges[g.k])});
  // For each operand: aligned base pointer, offset, then the stride of each
  // batch dim and of its two matrix dims (0 where the operand does not vary).
  auto maps = op.getIndexingMapsArray();
  std::array<std::array<unsigned, 2>, 3> matrixDims = {
      std::array<unsigned, 2>{g.m, g.k}, {g.k, g.n}, {g.m, g.n}};
  for (unsigned operand = 0; operand < 3; ++operand) {
    Value memref = op->getOperand(operand);
    auto meta = memref::ExtractStridedMetadataOp::create(b, loc, memref);
    Value ptr = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
    args.push_back(i64(ptr));
    args.push_back(i64(meta.getOffset()));
    SmallVector<unsigned> dims = *mapDims(maps[operand]);
    auto strideOf = [&](unsigned dim) -> Value {
      auto it = llvm::find(dims, dim);
      if (it == dims.end())
        return constant(0);
      return i64(meta.getStrides()[it - dims.begin()]);
    };
    for (unsigned i = 0; i < kMaxBatchDims; ++i)
      args.push_back(i < g.batch.size() ? strideOf(g.batch[i]) : constant(0));
    args.push_back(strideOf(matrixDims[operand][0]));
    args.push_back(strideOf(matrixDims[operand][1]));
  }
  // beta: 0 when C was just zero-filled (the fill goes: one pass over C
  // less, and the GEMM does not read it), else 1 (C accumulates).
  linalg::FillOp fill = freshZeroFill(op);
  args.push_back(constant(fill ? 0 : 1));
  if (fill)
    fill.erase();
  func::CallOp::create(b, loc, callee, args);
  op.erase();
  return success();
}

/// Worth explaining when it is not a GEMM: a reduction of two buffers into
/// one that multiplies (elementwise generics, sums and the norms' fused
/// many-input reductions are no GEMM candidates).
bool isContractionLike(linalg::GenericOp op) {
  if (op.getNumReductionLoops() == 0 || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1)
    return false;
  return llvm::any_of(op.getRegion().front(),
                      [](Operation &inner) { return llvm::isa<arith::MulFOp>(inner); });
}

struct LccGemmToLibraryPass : lcc::impl::LccGemmToLibraryPassBase<LccGemmToLibraryPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<linalg::GenericOp, GemmDims>> matches;
    module.walk([&](linalg::GenericOp op) {
      std::string why;
      if (auto g = matchGemm(op, why))
        matches.push_back({op, *g});
      else if (explain && isContractionLike(op))
        op.emitRemark() << "lcc-gemm-to-library: not a library GEMM (stays a loop nest): " << why;
    });
    for (auto &[op, g] : matches)
      if (failed(replaceWithCall(op, g, module, prefix)))
        return signalPassFailure();
    if (prefix != "lcc_" &&
        (failed(retargetAttention(module)) || failed(retargetCollectives(module))))
      return signalPassFailure();
  }

  /// The collectives' calls (lowering/Collectives.cpp) go to the target's
  /// too: on CUDA they are enqueued on the GPU's streams (and captured into
  /// its graph) instead of running on host buffers. lcc_group_rank, a host
  /// query, stays.
  LogicalResult retargetCollectives(ModuleOp module) {
    static constexpr const char *kCollectives[] = {"lcc_all_reduce",
                                                   "lcc_all_gather",
                                                   "lcc_reduce_scatter",
                                                   "lcc_broadcast",
                                                   "lcc_send",
                                                   "lcc_recv",
                                                   "lcc_group_start",
                                                   "lcc_group_end",
                                                   "lcc_group_end_posted",
                                                   "lcc_all_reduce_start",
                                                   "lcc_all_gather_start",
                                                   "lcc_reduce_scatter_start",
                                                   "lcc_wait"};
    for (StringRef old : kCollectives) {
      auto f = module.lookupSymbol<func::FuncOp>(old);
      if (!f)
        continue;
      std::string name = prefix + old.drop_front(strlen("lcc_")).str();
      if (!declareKernel(module, name, f.getNumArguments()))
        return failure();
      SmallVector<func::CallOp> calls;
      module.walk([&](func::CallOp call) {
        if (call.getCallee() == old)
          calls.push_back(call);
      });
      for (func::CallOp call : calls)
        call.setCallee(name);
      f.erase();
    }
    return success();
  }

  /// The fused attention's calls (bufferized lcc.attention/attention_grad)
  /// go to the target's kernels too: `<prefix>attention_fwd/_bwd`. The CUDA
  /// kernels exist for bf16/f16 operands and head sizes 16, 32, 64, 128
  /// (runtime/cuda/kernels/FlashAttention.cu); anything else is an error
  /// here, at the attention's location, rather than at run time.
  LogicalResult retargetAttention(ModuleOp module) {
    SmallVector<func::CallOp> calls;
    module.walk([&](func::CallOp call) {
      if (call.getCallee() == "lcc_attention_fwd" || call.getCallee() == "lcc_attention_bwd")
        calls.push_back(call);
    });
    for (func::CallOp call : calls) {
      APInt dtype, dim;
      bool known = matchPattern(call.getOperand(0), m_ConstantInt(&dtype)) &&
                   matchPattern(call.getOperand(6), m_ConstantInt(&dim));
      int64_t d = known ? dim.getSExtValue() : 0;
      if (!known || (dtype != 2 && dtype != 3) || !lcc::flash::hasKernelFor(d))
        return call.emitError()
               << "lcc-gemm-to-library: the " << prefix
               << " fused attention has kernels for bf16/f16 operands (--precision=bf16|fp16) "
                  "and head sizes 16, 32, 64 and 128; this one has "
               << (!known ? std::string("unknown")
                          : dtype == 0 ? "f32" : dtype == 1 ? "f64" : "half-precision")
               << " operands and head size " << d << " (use --attention=decomposed)";
      std::string name = prefix + call.getCallee().drop_front(strlen("lcc_")).str();
      if (!declareKernel(module, name, call.getNumOperands()))
        return failure();
      call.setCallee(name);
    }
    for (StringRef old : {"lcc_attention_fwd", "lcc_attention_bwd"})
      if (auto f = module.lookupSymbol<func::FuncOp>(old); f && f.symbolKnownUseEmpty(module))
        f.erase();
    return success();
  }
};

} // namespace
