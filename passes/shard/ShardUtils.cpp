//===- ShardUtils.cpp - shared pieces of the sharding passes --------------===//
#include "passes/shard/ShardUtils.h"

#include "dialects/lcc/vjp/VjpUtils.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
namespace vjp = lcc::vjp;

namespace lcc::shard {

LogicalResult declareGroup(ModuleOp module, StringRef group, int64_t size, StringRef pass) {
  MLIRContext *ctx = module.getContext();
  NamedAttrList groups;
  if (auto existing = module->getAttrOfType<DictionaryAttr>("lcc.process_groups")) {
    if (auto old = existing.getAs<IntegerAttr>(group); old && old.getInt() != size)
      return module.emitError() << pass << ": process group '" << group
                                << "' is already declared with " << old.getInt()
                                << " ranks; this pass needs " << size;
    groups.append(existing.getValue());
  }
  groups.set(group, IntegerAttr::get(IntegerType::get(ctx, 64), size));
  module->setAttr("lcc.process_groups", groups.getDictionary(ctx));
  return success();
}

RankedTensorType FlatLayout::shardType() const {
  return RankedTensorType::get({shard}, full.getElementType());
}

FlatLayout flatLayout(RankedTensorType full, int64_t parts) {
  FlatLayout l;
  l.full = full;
  l.numel = full.getNumElements();
  l.parts = parts;
  l.shard = (l.numel + parts - 1) / parts;
  return l;
}

Value flattenPadded(OpBuilder &b, Location loc, Value full, const FlatLayout &layout) {
  Value flat = full;
  if (layout.full.getRank() != 1)
    flat = vjp::reshape(b, loc, full, {layout.numel});
  int64_t pad = layout.padded() - layout.numel;
  if (pad == 0)
    return flat;
  Value zeros = vjp::fill(b, loc, RankedTensorType::get({pad}, layout.full.getElementType()), 0.0);
  return vjp::concat(b, loc, {flat, zeros}, 0);
}

Value toShard(OpBuilder &b, Location loc, Value full, const FlatLayout &layout, StringRef group) {
  Value flat = flattenPadded(b, loc, full, layout);
  return ShardSliceOp::create(b, loc, layout.shardType(), flat, group, /*axis=*/0);
}

Value fromShard(OpBuilder &b, Location loc, Value shard, const FlatLayout &layout,
                StringRef group) {
  auto gatheredType = RankedTensorType::get({layout.padded()}, layout.full.getElementType());
  Value all = AllGatherOp::create(b, loc, gatheredType, shard, group, /*axis=*/0);
  if (layout.padded() != layout.numel)
    all = vjp::sliceAxis(b, loc, all, 0, 0, layout.numel);
  if (layout.full.getRank() != 1)
    all = vjp::reshape(b, loc, all, layout.full.getShape());
  return all;
}

DictionaryAttr shardAttr(MLIRContext *ctx, const FlatLayout &layout, StringRef group) {
  Builder b(ctx);
  return b.getDictionaryAttr({
      b.getNamedAttr("group", b.getStringAttr(group)),
      b.getNamedAttr("parts", b.getI64IntegerAttr(layout.parts)),
      b.getNamedAttr("shape", b.getDenseI64ArrayAttr(layout.full.getShape())),
  });
}

DictionaryAttr splitAttr(MLIRContext *ctx, StringRef group, int64_t parts, int64_t dim,
                         int64_t blocks, ArrayRef<int64_t> shape) {
  Builder b(ctx);
  return b.getDictionaryAttr({
      b.getNamedAttr("group", b.getStringAttr(group)),
      b.getNamedAttr("parts", b.getI64IntegerAttr(parts)),
      b.getNamedAttr("dim", b.getI64IntegerAttr(dim)),
      b.getNamedAttr("blocks", b.getI64IntegerAttr(blocks)),
      b.getNamedAttr("shape", b.getDenseI64ArrayAttr(shape)),
  });
}

DictionaryAttr shardAttr(MLIRContext *ctx, const FlatLayout &layout, StringRef group,
                         DictionaryAttr within) {
  DictionaryAttr attr = shardAttr(ctx, layout, group);
  if (!within)
    return attr;
  NamedAttrList list(attr);
  list.set("within", within);
  return list.getDictionary(ctx);
}

/// Position of `v`'s definition in `block` (-1 for arguments).
static int64_t position(Value v, const llvm::DenseMap<Operation *, int64_t> &order) {
  Operation *def = v.getDefiningOp();
  return def ? order.lookup(def) : -1;
}

static llvm::DenseMap<Operation *, int64_t> blockOrder(Block &block) {
  llvm::DenseMap<Operation *, int64_t> order;
  int64_t i = 0;
  for (Operation &op : block)
    order[&op] = i++;
  return order;
}

SmallVector<GradientOp> markersByReadiness(func::FuncOp step) {
  Block &block = step.getBody().front();
  auto order = blockOrder(block);
  SmallVector<GradientOp> markers;
  for (Operation &op : block)
    if (auto g = llvm::dyn_cast<GradientOp>(op))
      markers.push_back(g);
  llvm::stable_sort(markers, [&](GradientOp a, GradientOp b) {
    return position(a.getInput(), order) < position(b.getInput(), order);
  });
  return markers;
}

func::FuncOp forwardToSplit(ModuleOp module, StringRef function, int64_t tp, StringRef pass,
                            StringRef what) {
  auto fn = module.lookupSymbol<func::FuncOp>(function);
  if (!fn || fn.isExternal()) {
    module.emitError() << pass << ": no @" << function;
    return {};
  }
  if (tp < 1) {
    module.emitError() << pass << ": tp must be >= 1, got " << tp;
    return {};
  }
  if (module.lookupSymbol((function + "_grad").str())) {
    module.emitError() << pass << ": @" << function << "_grad exists: " << what
                       << " before lcc-autodiff derives its backward";
    return {};
  }
  return fn;
}

bool isElementwise(Operation *op) {
  return llvm::isa<NegOp, ExpOp, LogOp, TanhOp, ErfOp, SqrtOp, RsqrtOp, ReluOp, SigmoidOp, SiluOp,
                   GeluOp, ConvertOp, AddOp, SubOp, MulOp, DivOp, PowOp, MaximumOp, MinimumOp,
                   CmpOp, WhereOp>(op);
}

int64_t byteSize(RankedTensorType type) {
  return type.getNumElements() * std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
}

SmallVector<SmallVector<size_t>> bucketIndices(ArrayRef<RankedTensorType> types, int64_t bytes,
                                               function_ref<bool(size_t, size_t)> apart) {
  SmallVector<SmallVector<size_t>> out;
  int64_t filled = 0;
  for (size_t i = 0; i < types.size(); ++i) {
    int64_t size = byteSize(types[i]);
    // A bucket is one flat buffer: one element type.
    bool newBucket = out.empty() || filled + size > bytes ||
                     types[out.back().front()].getElementType() != types[i].getElementType() ||
                     (apart && apart(out.back().front(), i));
    if (newBucket) {
      out.emplace_back();
      filled = 0;
    }
    out.back().push_back(i);
    filled += size;
  }
  return out;
}

SmallVector<SmallVector<GradientOp>> buckets(ArrayRef<GradientOp> markers, int64_t bytes) {
  SmallVector<RankedTensorType> types;
  for (GradientOp m : markers)
    types.push_back(m.getType());
  SmallVector<SmallVector<GradientOp>> out;
  for (const SmallVector<size_t> &group : bucketIndices(types, bytes)) {
    out.emplace_back();
    for (size_t i : group)
      out.back().push_back(markers[i]);
  }
  return out;
}

void setInsertionAfterAll(OpBuilder &b, Block *block, ValueRange values) {
  Operation *last = nullptr;
  for (Value v : values) {
    Operation *def = v.getDefiningOp();
    if (!def)
      continue;
    def = block->findAncestorOpInBlock(*def);
    if (!last || last->isBeforeInBlock(def))
      last = def;
  }
  if (last)
    b.setInsertionPointAfter(last);
  else
    b.setInsertionPointToStart(block);
}

SmallVector<Value> allReduceTogether(OpBuilder &b, Location loc, ValueRange values, StringRef group,
                                     StringRef reduction) {
  if (values.size() == 1)
    return {AllReduceOp::create(b, loc, values[0].getType(), values[0], group, reduction)};
  SmallVector<Value> flat;
  for (Value v : values)
    flat.push_back(vjp::reshape(b, loc, v, {vjp::tensorType(v).getNumElements()}));
  Value all = vjp::concat(b, loc, flat, 0);
  Value reduced = AllReduceOp::create(b, loc, all.getType(), all, group, reduction);
  SmallVector<Value> out;
  int64_t offset = 0;
  for (Value v : values) {
    auto type = vjp::tensorType(v);
    Value part = vjp::sliceAxis(b, loc, reduced, 0, offset, offset + type.getNumElements());
    offset += type.getNumElements();
    out.push_back(vjp::reshape(b, loc, part, type.getShape()));
  }
  return out;
}

void averageLoss(func::FuncOp fn, StringRef group) {
  auto ret = llvm::cast<func::ReturnOp>(fn.getBody().front().getTerminator());
  int64_t index = -1;
  for (unsigned i = 0; i < fn.getNumResults(); ++i) {
    auto name = fn.getResultAttrOfType<StringAttr>(i, "lcc.output");
    if (name && name.getValue() == "loss")
      index = i;
  }
  if (index < 0 && fn.getNumResults() == 1)
    index = 0;
  if (index < 0)
    return;
  OpBuilder b(ret);
  Value loss = ret.getOperand(index);
  Value mean = AllReduceOp::create(b, ret.getLoc(), loss.getType(), loss, group, "mean");
  ret.setOperand(index, mean);
}

} // namespace lcc::shard
