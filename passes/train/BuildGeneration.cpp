//===- BuildGeneration.cpp - prefill and KV-cache decode entries ----------===//
//
// See Passes.td (lcc-build-generation). The entries are the model's own
// @forward, imported again at batch 1 and the entry's sequence length, so
// every op keeps its lowering, fusion and memory plan; only what depends on
// where a token sits changes: the attention reads a cache, position tables
// and rotary embeddings read a position given at run time. The decode step
// keeps static shapes (the cache is `context` rows, the rows past the
// position masked), so one compiled function, and on a GPU one captured
// graph, serves every position.
//
//===----------------------------------------------------------------------===//
#include "passes/train/Passes.h"

#include "dialects/lcc/LccOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Transforms/RegionUtils.h"

#include <cmath>
#include <limits>
#include <map>
#include <tuple>

namespace lcc {
#define GEN_PASS_DEF_LCCBUILDGENERATIONPASS
#include "passes/train/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {

RankedTensorType tensorOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

/// The argument attributes of a run-time input named `name`.
DictionaryAttr inputAttrs(Builder &b, llvm::StringRef name) {
  return b.getDictionaryAttr(b.getNamedAttr("lcc.input", b.getStringAttr(name)));
}

struct LccBuildGenerationPass : lcc::impl::LccBuildGenerationPassBase<LccBuildGenerationPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward || forward.isExternal()) {
      module.emitError() << "lcc-build-generation: the module has no @forward";
      return signalPassFailure();
    }
    if (entry != "prefill" && entry != "decode_step") {
      forward.emitError() << "lcc-build-generation: entry must be prefill or decode_step, not '"
                          << entry << "'";
      return signalPassFailure();
    }
    std::string name = symbol.empty() ? std::string(entry) : std::string(symbol);
    if (module.lookupSymbol(name)) {
      forward.emitError() << "lcc-build-generation: @" << name << " exists already";
      return signalPassFailure();
    }
    func::FuncOp fn = forward.clone();
    fn.setName(name);
    module.push_back(fn);
    if (failed(build(fn))) {
      fn.erase();
      return signalPassFailure();
    }
  }

  /// A prefill's keys or values [1, H, seq, D] as the cache [1, H, context,
  /// D]: zero rows after them (decode steps write each row before reading it).
  static Value padToContext(Value kv, int64_t context) {
    auto type = tensorOf(kv);
    int64_t seq = type.getDimSize(2);
    if (seq == context)
      return kv;
    OpBuilder b(kv.getContext());
    b.setInsertionPointAfterValue(kv);
    auto rest = RankedTensorType::get(
        {type.getDimSize(0), type.getDimSize(1), context - seq, type.getDimSize(3)},
        type.getElementType());
    Value zeros = lcc::FillOp::create(b, kv.getLoc(), rest, b.getF64FloatAttr(0.0));
    return lcc::ConcatOp::create(
        b, kv.getLoc(),
        type.clone({type.getDimSize(0), type.getDimSize(1), context, type.getDimSize(3)}),
        ValueRange{kv, zeros}, b.getI64IntegerAttr(2));
  }

  LogicalResult build(func::FuncOp fn) {
    MLIRContext *ctx = fn.getContext();
    bool decode = entry == "decode_step";
    Block &body = fn.getBody().front();
    auto ret = llvm::cast<func::ReturnOp>(body.getTerminator());
    auto ce = ret.getNumOperands() == 1 ? ret.getOperand(0).getDefiningOp<lcc::CrossEntropyOp>()
                                        : lcc::CrossEntropyOp();
    if (!ce)
      return fn.emitError() << "lcc-build-generation: @forward must return "
                               "cross_entropy(logits, targets) to generate text";
    Value logits = ce.getLogits();
    auto targets = llvm::dyn_cast<BlockArgument>(ce.getTargets());
    auto logitsType = tensorOf(logits);
    if (logitsType.getRank() != 3 || logitsType.getDimSize(0) != 1)
      return ce.emitError() << "lcc-build-generation: the logits must be [1, seq, vocab] (the "
                               "model imported at batch 1), not "
                            << logitsType;
    int64_t seq = logitsType.getDimSize(1);
    int64_t length = decode ? context : (context ? context : seq);
    if (decode && seq != 1)
      return ce.emitError() << "lcc-build-generation: decode_step needs @forward at sequence "
                               "length 1, not "
                            << seq;
    if (!decode && seq > length)
      return ce.emitError() << "lcc-build-generation: prefill runs over at most the context ("
                            << length << " positions), but @forward has sequence length " << seq;
    if (length < 1)
      return fn.emitError() << "lcc-build-generation: decode_step needs the cache's length "
                               "(context)";
    if (decode && !cache)
      return fn.emitError() << "lcc-build-generation: decode_step reads the KV cache: it "
                               "cannot be made with cache=false";

    OpBuilder b(ctx);
    auto i32 = b.getI32Type();
    auto posType = RankedTensorType::get({1}, i32);
    if (failed(fn.insertArgument(fn.getNumArguments(), posType, inputAttrs(b, "position"),
                                 fn.getLoc())))
      return fn.emitError() << "lcc-build-generation: cannot add the position input";
    Value position = fn.getArgument(fn.getNumArguments() - 1);

    if (decode) {
      // What would read positions 0..seq-1 must read `position`.
      WalkResult positional = fn.walk([&](Operation *op) {
        if (llvm::isa<lcc::IotaOp, lcc::CausalMaskOp>(op)) {
          op->emitError() << "lcc-build-generation: " << op->getName()
                          << " depends on positions in a way the decode step cannot rewrite";
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
      if (positional.wasInterrupted())
        return failure();
      SmallVector<lcc::SliceOp> tables;
      fn.walk([&](lcc::SliceOp s) {
        if (isPositionTable(fn, s))
          tables.push_back(s);
      });
      for (lcc::SliceOp s : tables) {
        auto table = tensorOf(s.getInput());
        if (table.getDimSize(0) < length)
          return s.emitError() << "lcc-build-generation: the position table has "
                               << table.getDimSize(0) << " rows, fewer than the context (" << length
                               << ")";
        b.setInsertionPoint(s);
        Value row = lcc::GatherOp::create(b, s.getLoc(), s.getType(), s.getInput(), position,
                                          b.getI64IntegerAttr(0));
        s.getResult().replaceAllUsesWith(row);
        s.erase();
      }
      SmallVector<lcc::RopeOp> ropes;
      fn.walk([&](lcc::RopeOp r) { ropes.push_back(r); });
      // Every layer's q and k share one pair of rows per (theta, dim, offset).
      std::map<std::tuple<double, int64_t, int64_t>, std::pair<Value, Value>> rows;
      for (lcc::RopeOp r : ropes)
        if (failed(rewriteRope(r, position, length, rows)))
          return failure();
    }

    // The caches, one key and one value per attention, in program order.
    SmallVector<lcc::AttentionOp> attentions;
    if (cache)
      fn.walk([&](lcc::AttentionOp a) { attentions.push_back(a); });
    if (attentions.empty() && cache)
      return fn.emitError() << "lcc-build-generation: the model has no attention to cache";
    SmallVector<Value> results;
    SmallVector<std::string> names = {"logits"};
    for (auto [n, a] : llvm::enumerate(attentions)) {
      if (!a.getCausal())
        return a.emitError() << "lcc-build-generation: generation needs causal attention";
      std::string k = "cache.k." + std::to_string(n), v = "cache.v." + std::to_string(n);
      names.push_back(k);
      names.push_back(v);
      if (!decode) {
        results.push_back(padToContext(a.getKey(), length));
        results.push_back(padToContext(a.getValue(), length));
        continue;
      }
      auto kv = decodeAttention(fn, a, position, length, k, v);
      if (failed(kv))
        return failure();
      results.push_back(kv->first);
      results.push_back(kv->second);
    }

    // The logits at `position`: the head's matmul on that row only (prefill
    // would otherwise multiply every row by the vocabulary).
    b.setInsertionPoint(ret);
    auto rowType =
        RankedTensorType::get({1, 1, logitsType.getDimSize(2)}, logitsType.getElementType());
    Value atPosition;
    if (!decode) {
      auto head = logits.getDefiningOp<lcc::MatmulOp>();
      if (head && tensorOf(head.getLhs()).getRank() == 3 && !head.getTransposeLhs() &&
          tensorOf(head.getRhs()).getRank() == 2) {
        auto lhsType = tensorOf(head.getLhs());
        Value row = lcc::GatherOp::create(
            b, head.getLoc(),
            RankedTensorType::get({1, 1, lhsType.getDimSize(2)}, lhsType.getElementType()),
            head.getLhs(), position, b.getI64IntegerAttr(1));
        atPosition = lcc::MatmulOp::create(b, head.getLoc(), rowType, row, head.getRhs(),
                                           head.getTransposeLhs(), head.getTransposeRhs());
      } else {
        atPosition = lcc::GatherOp::create(b, ce.getLoc(), rowType, logits, position,
                                           b.getI64IntegerAttr(1));
      }
    } else {
      atPosition = logits;
    }
    results.insert(results.begin(), atPosition);
    auto newRet = func::ReturnOp::create(b, ret.getLoc(), results);
    ret.erase();
    ce.erase();
    if (targets && targets.getOwner() == &body && targets.use_empty() &&
        failed(fn.eraseArgument(targets.getArgNumber())))
      return fn.emitError() << "lcc-build-generation: cannot drop the targets input";
    // What only the loss read (and the old head) goes.
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body.getOperations())))
      if (&op != newRet && isOpTriviallyDead(&op))
        op.erase();
    fn.setType(FunctionType::get(ctx, fn.getArgumentTypes(), newRet.getOperandTypes()));
    for (auto [i, name] : llvm::enumerate(names))
      fn.setResultAttrs(i,
                        b.getDictionaryAttr(b.getNamedAttr("lcc.output", b.getStringAttr(name))));
    return success();
  }

  /// `param[0:1, ...]` of a parameter: the table row of position 0 at
  /// sequence length 1 (wpe[0:seq]).
  static bool isPositionTable(func::FuncOp fn, lcc::SliceOp s) {
    auto arg = llvm::dyn_cast<BlockArgument>(s.getInput());
    if (!arg || arg.getOwner() != &fn.getBody().front() ||
        !fn.getArgAttr(arg.getArgNumber(), "lcc.param"))
      return false;
    auto in = tensorOf(s.getInput());
    ArrayRef<int64_t> start = s.getStart(), limit = s.getLimit();
    if (s.getStep() && llvm::any_of(*s.getStep(), [](int64_t k) { return k != 1; }))
      return false;
    for (int64_t d = 0; d < in.getRank(); ++d)
      if (start[d] != 0 || limit[d] != (d == 0 ? 1 : in.getDimSize(d)))
        return false;
    return in.getRank() >= 1 && in.getDimSize(0) > 1;
  }

  /// rope(x) at `position` + offset: x * [c, c] + rotate_half(x) * [-s, s],
  /// with the rows of cos/sin tables computed as lcc.rope's lowering does
  /// (frequencies and angles in f32) for every position the cache holds.
  LogicalResult
  rewriteRope(lcc::RopeOp r, Value position, int64_t length,
              std::map<std::tuple<double, int64_t, int64_t>, std::pair<Value, Value>> &rows) {
    auto type = tensorOf(r.getInput());
    int64_t rank = type.getRank(), dim = type.getShape().back(), half = dim / 2;
    if (type.getDimSize(rank - 2) != 1)
      return r.emitError() << "lcc-build-generation: rope over " << type.getDimSize(rank - 2)
                           << " positions in a one-token step";
    if (!type.getElementType().isF32())
      return r.emitError() << "lcc-build-generation: rope tables are f32; the input is "
                           << type.getElementType();
    OpBuilder b(r);
    Location loc = r.getLoc();
    std::pair<Value, Value> &cs =
        rows[{r.getTheta().convertToDouble(), dim, int64_t(r.getOffset())}];
    if (!cs.first) {
      // Made at the first rope (program order), so they dominate the others.
      int64_t count = length + int64_t(r.getOffset());
      std::vector<float> cosT(size_t(count * dim)), sinT(size_t(count * dim));
      float theta = float(r.getTheta().convertToDouble());
      for (int64_t p = 0; p < count; ++p)
        for (int64_t i = 0; i < half; ++i) {
          float freq = std::pow(theta, -(float(i) * 2.0f) / float(dim));
          float angle = float(p) * freq;
          float c = float(std::cos(double(angle))), s = float(std::sin(double(angle)));
          cosT[p * dim + i] = cosT[p * dim + i + half] = c;
          sinT[p * dim + i] = -s;
          sinT[p * dim + i + half] = s;
        }
      auto tableType = RankedTensorType::get({count, dim}, b.getF32Type());
      auto rowType = RankedTensorType::get({1, dim}, b.getF32Type());
      // An offset shifts the positions: the table starts `offset` rows later.
      auto row = [&](std::vector<float> &data) -> Value {
        Value table = lcc::ConstantOp::create(
            b, loc, DenseElementsAttr::get(tableType, llvm::ArrayRef<float>(data)));
        if (r.getOffset())
          table = lcc::SliceOp::create(b, loc, RankedTensorType::get({length, dim}, b.getF32Type()),
                                       table, b.getDenseI64ArrayAttr({int64_t(r.getOffset()), 0}),
                                       b.getDenseI64ArrayAttr({count, dim}), DenseI64ArrayAttr());
        return lcc::GatherOp::create(b, loc, rowType, table, position, b.getI64IntegerAttr(0));
      };
      cs = {row(cosT), row(sinT)};
    }
    Value c = cs.first, s = cs.second;
    Value x = r.getInput();
    // x's halves along the last dimension, swapped: rotate_half(x) before the signs.
    SmallVector<int64_t> lo(rank, 0), mid(rank, 0), end(type.getShape()), halfEnd(end);
    mid.back() = half;
    halfEnd.back() = half;
    auto halfType = type.clone(halfEnd);
    Value first = lcc::SliceOp::create(b, loc, halfType, x, b.getDenseI64ArrayAttr(lo),
                                       b.getDenseI64ArrayAttr(halfEnd), DenseI64ArrayAttr());
    Value second = lcc::SliceOp::create(b, loc, halfType, x, b.getDenseI64ArrayAttr(mid),
                                        b.getDenseI64ArrayAttr(end), DenseI64ArrayAttr());
    Value rotated = lcc::ConcatOp::create(b, loc, type, ValueRange{second, first},
                                          b.getI64IntegerAttr(rank - 1));
    Value xc = lcc::MulOp::create(b, loc, type, x, c);
    Value rs = lcc::MulOp::create(b, loc, type, rotated, s);
    Value out = lcc::AddOp::create(b, loc, type, xc, rs);
    r.getResult().replaceAllUsesWith(out);
    r.erase();
    return success();
  }

  /// The attention of one new token against the cache: the cache inputs
  /// `kName`/`vName` with row `position` replaced by this token's key and
  /// value (the results), then grouped-query scores over every row,
  /// rows past `position` masked out.
  FailureOr<std::pair<Value, Value>> decodeAttention(func::FuncOp fn, lcc::AttentionOp a,
                                                     Value position, int64_t length,
                                                     const std::string &kName,
                                                     const std::string &vName) {
    auto qType = tensorOf(a.getQuery()), kType = tensorOf(a.getKey());
    if (qType.getRank() != 4 || qType.getDimSize(0) != 1 || qType.getDimSize(2) != 1 ||
        kType.getDimSize(2) != 1)
      return a.emitError() << "lcc-build-generation: attention of one token expects "
                              "[1, H, 1, D] queries, not "
                           << qType;
    int64_t heads = qType.getDimSize(1), kvHeads = kType.getDimSize(1), d = qType.getDimSize(3);
    Type elem = qType.getElementType();
    auto cacheType = RankedTensorType::get({1, kvHeads, length, d}, kType.getElementType());
    OpBuilder b(fn.getContext());
    unsigned n = fn.getNumArguments();
    if (failed(fn.insertArgument(n, cacheType, inputAttrs(b, kName), a.getLoc())) ||
        failed(fn.insertArgument(n + 1, cacheType, inputAttrs(b, vName), a.getLoc())))
      return a.emitError() << "lcc-build-generation: cannot add the cache inputs";
    Value kCache = fn.getArgument(n), vCache = fn.getArgument(n + 1);

    b.setInsertionPoint(a);
    Location loc = a.getLoc();
    auto i32 = b.getI32Type(), i1 = b.getI1Type();
    Value rowIndex = lcc::IotaOp::create(b, loc, RankedTensorType::get({1, 1, length, 1}, i32), 2);
    Value here = lcc::CmpOp::create(b, loc, RankedTensorType::get({1, 1, length, 1}, i1), rowIndex,
                                    position, b.getStringAttr("eq"));
    Value k = lcc::WhereOp::create(b, loc, cacheType, here, a.getKey(), kCache);
    Value v = lcc::WhereOp::create(b, loc, cacheType, here, a.getValue(), vCache);

    int64_t group = heads / kvHeads;
    auto groupedType = RankedTensorType::get({1, kvHeads, group, d}, elem);
    auto scoresType = RankedTensorType::get({1, kvHeads, group, length}, elem);
    Value q = lcc::ReshapeOp::create(b, loc, groupedType, a.getQuery());
    Value scores = lcc::MatmulOp::create(b, loc, scoresType, q, k, false, true);
    auto scalar = RankedTensorType::get({}, elem);
    Value scale = lcc::FillOp::create(b, loc, scalar, b.getF64FloatAttr(a.getScaleOrDefault()));
    scores = lcc::MulOp::create(b, loc, scoresType, scores, scale);
    Value keyIndex = lcc::IotaOp::create(b, loc, RankedTensorType::get({length}, i32), 0);
    Value seen = lcc::CmpOp::create(b, loc, RankedTensorType::get({length}, i1), keyIndex, position,
                                    b.getStringAttr("le"));
    Value masked = lcc::FillOp::create(b, loc, scalar,
                                       b.getF64FloatAttr(-std::numeric_limits<double>::infinity()));
    scores = lcc::WhereOp::create(b, loc, scoresType, seen, scores, masked);
    Value probs = lcc::SoftmaxOp::create(b, loc, scoresType, scores, b.getI64IntegerAttr(-1));
    Value out = lcc::MatmulOp::create(b, loc, groupedType, probs, v, false, false);
    a.getResult().replaceAllUsesWith(lcc::ReshapeOp::create(b, loc, qType, out).getResult());
    a.erase();
    return std::make_pair(k, v);
  }
};

} // namespace
