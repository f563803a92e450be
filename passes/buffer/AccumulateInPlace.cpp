//===- AccumulateInPlace.cpp - micro-batch sums updated in place ----------===//
//
// See Passes.td (lcc-accumulate-in-place). One-shot bufferization keeps a
// loop-carried tensor in one buffer only when what the body yields is written
// into that buffer; `acc + g` lowered to a generic with a fresh init would
// make every iteration allocate the next sum (and the memory plan could not
// place it: it leaves the body).
//
//===----------------------------------------------------------------------===//
#include "passes/buffer/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/MapVector.h"

namespace lcc {
#define GEN_PASS_DEF_LCCACCUMULATEINPLACEPASS
#include "passes/buffer/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {

/// `acc`'s only use, when it is an input of the elementwise `op` read with
/// the identity map; null otherwise.
OpOperand *carriedInput(linalg::GenericOp op, BlockArgument acc) {
  if (op.getNumParallelLoops() != op.getNumLoops() || !acc.hasOneUse())
    return nullptr;
  OpOperand *input = &*acc.getUses().begin();
  if (input->getOwner() != op.getOperation() || !op.isDpsInput(input) ||
      !op.getMatchingIndexingMap(input).isIdentity())
    return nullptr;
  return input;
}

/// Makes `op`'s result `r` be written into `acc` when `op` reads `acc`
/// (carriedInput) and never reads the init it has for `r` (so the init's
/// value does not matter).
bool writeInto(linalg::GenericOp op, unsigned r, BlockArgument acc) {
  OpOperand *init = op.getDpsInitOperand(r);
  if (!carriedInput(op, acc) || !op.getMatchingIndexingMap(init).isIdentity() ||
      op.payloadUsesValueFromOperand(init) || init->get().getType() != acc.getType())
    return false;
  init->set(acc);
  return true;
}

/// Whether `op` is elementwise over two inputs and one init it never reads,
/// every operand read with the identity map: a sum the pass can redirect.
bool isElementwiseOfTwo(linalg::GenericOp op) {
  return op.getNumParallelLoops() == op.getNumLoops() && op.getNumDpsInputs() == 2 &&
         op.getNumDpsInits() == 1 &&
         llvm::all_of(op.getIndexingMapsArray(), [](AffineMap m) { return m.isIdentity(); }) &&
         !op.payloadUsesValueFromOperand(op.getDpsInitOperand(0));
}

/// What `fn` returns as its result `r` when that is `materialize_in_destination
/// %v in %out` with `%out` an argument used nowhere else (lcc-out-params'
/// form): the store, else null.
bufferization::MaterializeInDestinationOp storedInOutParam(func::FuncOp fn, unsigned r) {
  Block &entry = fn.getBody().front();
  auto ret = llvm::cast<func::ReturnOp>(entry.getTerminator());
  auto store = ret.getOperand(r).getDefiningOp<bufferization::MaterializeInDestinationOp>();
  auto out = store ? llvm::dyn_cast<BlockArgument>(store.getDest()) : BlockArgument();
  return out && out.getOwner() == &entry && out.hasOneUse() ? store : nullptr;
}

/// A carried sum `acc + g` that the layer computing g can do (Passes.td).
struct IntoLayer {
  linalg::GenericOp sum;
  unsigned accInput; // which of the sum's two inputs is the carried value
  func::CallOp call;
  unsigned result;   // the call's result the sum adds
  unsigned outParam; // the call's operand that is that result's out-param
};

/// `op` as an IntoLayer when it is a sum of two identity-mapped inputs, `acc`
/// (carriedInput) and a result (its only use) of a call whose out-param for
/// that result is a `tensor.empty`, with a payload of its own.
std::optional<IntoLayer> intoLayer(linalg::GenericOp op, BlockArgument acc) {
  OpOperand *input = carriedInput(op, acc);
  if (!input || !isElementwiseOfTwo(op))
    return std::nullopt;
  // The payload is cloned into the layer: it may use only its own values.
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(op.getRegion(), captured);
  if (!captured.empty())
    return std::nullopt;
  unsigned accInput = input->getOperandNumber();
  auto g = llvm::dyn_cast<OpResult>(op.getDpsInputOperand(1 - accInput)->get());
  auto call = g ? llvm::dyn_cast<func::CallOp>(g.getOwner()) : nullptr;
  if (!call || !g.hasOneUse() || g.getType() != acc.getType())
    return std::nullopt;
  unsigned out = call.getNumOperands() - call.getNumResults() + g.getResultNumber();
  if (!call.getOperand(out).getDefiningOp<tensor::EmptyOp>())
    return std::nullopt;
  return IntoLayer{op, accInput, call, g.getResultNumber(), out};
}

/// Rewrites `fn` so that its result `r` is its out-param plus what it was
/// (the sums' payload), and each of `sums` (one per call of `fn`) becomes
/// the call itself writing into the carried value's buffer. Fails (changing
/// nothing) unless `fn` returns `materialize_in_destination %v in %out` for
/// `r` with `%out` used nowhere else and every sum has the same payload.
bool moveIntoLayer(func::FuncOp fn, unsigned r, ArrayRef<IntoLayer> sums) {
  auto store = storedInOutParam(fn, r);
  if (!store)
    return false;
  auto out = llvm::cast<BlockArgument>(store.getDest());
  IntoLayer first = sums.front();
  for (IntoLayer s : sums)
    if (s.accInput != first.accInput ||
        !OperationEquivalence::isRegionEquivalentTo(&s.sum.getRegion(), &first.sum.getRegion(),
                                                    OperationEquivalence::IgnoreLocations))
      return false;
  // In the layer: out = out + v, written in place.
  OpBuilder b(store);
  auto sum = llvm::cast<linalg::GenericOp>(b.clone(*first.sum.getOperation()));
  sum.setOperand(first.accInput, out);
  sum.setOperand(1 - first.accInput, store.getSource());
  sum.getDpsInitOperand(0)->set(out);
  store.getSourceMutable().set(sum.getResult(0));
  // At each call: the carried value is the out-param, the call's result the
  // next carried value.
  for (IntoLayer s : sums) {
    Value acc = s.sum.getDpsInputOperand(s.accInput)->get();
    Operation *empty = s.call.getOperand(s.outParam).getDefiningOp();
    s.call.setOperand(s.outParam, acc);
    s.sum.getResult(0).replaceAllUsesWith(s.call.getResult(s.result));
    s.sum.erase();
    if (empty->use_empty())
      empty->erase();
  }
  return true;
}

/// A running sum a layer function carries from call to call (the gradient
/// sums of lcc-build-train-step's pipeline parts): its result `r` stores an
/// elementwise sum of an argument read nowhere else and another value. Like
/// moveIntoLayer, the function then adds the other value to its out-param
/// in place, and each call passes what it passed for that argument as the
/// out-param (a fill shared with other uses is cloned for it) and no longer
/// passes the argument. Fails (changing nothing) unless every call passes a
/// value read only there, or a fill, and a `tensor.empty` out-param.
bool carryInLayer(func::FuncOp fn, unsigned r, ArrayRef<func::CallOp> calls) {
  auto store = storedInOutParam(fn, r);
  auto sum = store ? store.getSource().getDefiningOp<linalg::GenericOp>() : nullptr;
  if (!sum || !isElementwiseOfTwo(sum))
    return false;
  Block &entry = fn.getBody().front();
  auto out = llvm::cast<BlockArgument>(store.getDest());
  OpOperand *carried = nullptr;
  for (OpOperand *input : sum.getDpsInputOperands())
    if (auto arg = llvm::dyn_cast<BlockArgument>(input->get());
        arg && arg.getOwner() == &entry && arg.hasOneUse() && arg.getType() == out.getType())
      carried = input;
  if (!carried)
    return false;
  unsigned in = llvm::cast<BlockArgument>(carried->get()).getArgNumber(), dest = out.getArgNumber();
  for (func::CallOp call : calls) {
    Value acc = call.getOperand(in);
    if ((!acc.hasOneUse() && !acc.getDefiningOp<linalg::FillOp>()) ||
        !call.getOperand(dest).getDefiningOp<tensor::EmptyOp>())
      return false;
  }
  // In the function: out = out + v, written in place.
  carried->set(out);
  sum.getDpsInitOperand(0)->set(out);
  for (func::CallOp call : calls) {
    Value acc = call.getOperand(in);
    if (!acc.hasOneUse()) {
      auto fill = acc.getDefiningOp<linalg::FillOp>();
      OpBuilder b(call);
      IRMapping map;
      if (auto empty = fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>())
        map.map(empty.getResult(), b.clone(*empty)->getResult(0));
      acc = b.clone(*fill, map)->getResult(0);
    }
    Operation *empty = call.getOperand(dest).getDefiningOp();
    call.setOperand(dest, acc);
    call->eraseOperand(in);
    if (empty->use_empty())
      empty->erase();
  }
  (void)fn.eraseArgument(in);
  return true;
}

struct LccAccumulateInPlacePass
    : lcc::impl::LccAccumulateInPlacePassBase<LccAccumulateInPlacePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<scf::ForOp> loops;
    bool tensors = true;
    module->walk([&](scf::ForOp loop) {
      if (!lcc::isMicroBatchLoop(loop))
        return;
      if (llvm::any_of(loop->getOperandTypes(), llvm::IsaPred<BaseMemRefType>)) {
        loop.emitError() << "lcc-accumulate-in-place: runs on tensors, before bufferization";
        tensors = false;
      }
      loops.push_back(loop);
    });
    if (!tensors)
      return signalPassFailure();

    // Sums a layer can do: grouped by layer function and result, moved only
    // when every call of that function has the same sum on that result.
    llvm::MapVector<std::pair<Operation *, unsigned>, SmallVector<IntoLayer>> byLayer;
    SymbolTableCollection symbols;
    for (scf::ForOp loop : loops) {
      auto yield = llvm::cast<scf::YieldOp>(loop.getBody()->getTerminator());
      for (auto [n, acc] : llvm::enumerate(loop.getRegionIterArgs())) {
        auto sum = llvm::dyn_cast<OpResult>(yield.getOperand(n));
        auto op = sum ? llvm::dyn_cast<linalg::GenericOp>(sum.getOwner()) : nullptr;
        if (!op)
          continue;
        if (std::optional<IntoLayer> into = intoLayer(op, acc)) {
          auto fn =
              symbols.lookupNearestSymbolFrom<func::FuncOp>(into->call, into->call.getCalleeAttr());
          if (fn && fn->hasAttr(lcc::kLayerAttr) && !fn.isExternal())
            byLayer[{fn, into->result}].push_back(*into);
        }
      }
    }
    int64_t intoLayers = 0;
    if (!byLayer.empty()) {
      llvm::DenseMap<Operation *, unsigned> calls;
      module->walk([&](func::CallOp call) {
        if (auto fn = symbols.lookupNearestSymbolFrom<func::FuncOp>(call, call.getCalleeAttr()))
          ++calls[fn];
      });
      for (auto &[key, sums] : byLayer)
        if (sums.size() == calls.lookup(key.first) &&
            moveIntoLayer(llvm::cast<func::FuncOp>(key.first), key.second, sums))
          intoLayers += sums.size();
    }

    // The other sums: the step writes them into their carried buffer.
    int64_t inPlace = 0, carried = 0;
    for (scf::ForOp loop : loops) {
      auto yield = llvm::cast<scf::YieldOp>(loop.getBody()->getTerminator());
      carried += loop.getNumRegionIterArgs();
      for (auto [n, acc] : llvm::enumerate(loop.getRegionIterArgs())) {
        auto sum = llvm::dyn_cast<OpResult>(yield.getOperand(n));
        auto op = sum ? llvm::dyn_cast<linalg::GenericOp>(sum.getOwner()) : nullptr;
        if (op && writeInto(op, sum.getResultNumber(), acc))
          ++inPlace;
      }
    }
    int64_t left = carried - inPlace - intoLayers;

    // Sums layer functions carry from call to call, one result at a time
    // (each rewrite drops an argument).
    llvm::MapVector<Operation *, SmallVector<func::CallOp>> callsOf;
    module->walk([&](func::CallOp call) {
      auto fn = symbols.lookupNearestSymbolFrom<func::FuncOp>(call, call.getCalleeAttr());
      if (fn && fn->hasAttr(lcc::kLayerAttr) && !fn.isExternal())
        callsOf[fn].push_back(call);
    });
    for (auto &[op, calls] : callsOf) {
      auto fn = llvm::cast<func::FuncOp>(op);
      for (unsigned r = 0; r < fn.getNumResults(); ++r)
        numCarriedInLayers += carryInLayer(fn, r, calls);
    }
    numIntoLayers += intoLayers;
    numInPlace += inPlace;
    numLeft += left;
  }
};

} // namespace
