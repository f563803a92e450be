//===- HostBuffers.cpp - where the CUDA host code's buffers lie -----------===//
#include "passes/gpu/HostBuffers.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/SymbolTable.h"

#include <optional>

using namespace mlir;

namespace lcc {

namespace {

/// How many layer-function calls deep an answer looks (lcc's are one: the
/// step calls its layers); deeper, or recursive, is not known.
constexpr int kMaxDepth = 4;
/// What a device allocation's address is a multiple of (cuMemAlloc).
constexpr int64_t kDeviceAllocation = 256;

/// An argument of a function's entry block.
bool isEntryArgument(Value v) {
  auto arg = llvm::dyn_cast<BlockArgument>(v);
  auto fn = arg ? llvm::dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()) : func::FuncOp();
  return fn && arg.getOwner() == &fn.getBody().front();
}

func::FuncOp functionOf(Value root) {
  auto arg = llvm::cast<BlockArgument>(root);
  return llvm::cast<func::FuncOp>(arg.getOwner()->getParentOp());
}

/// Bytes of a memref type's static offset (its first element's distance
/// from the aligned pointer); nullopt when dynamic.
std::optional<int64_t> offsetBytes(Type type) {
  auto memref = llvm::dyn_cast<MemRefType>(type);
  int64_t offset;
  SmallVector<int64_t> strides;
  if (!memref || failed(memref.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset))
    return std::nullopt;
  return offset * elementBytes(memref);
}

/// Shifts in argument order, so that equal sets compare equal.
void sortShifts(SmallVector<Value, 1> &shifts) {
  llvm::sort(shifts, [](Value x, Value y) {
    return llvm::cast<BlockArgument>(x).getArgNumber() <
           llvm::cast<BlockArgument>(y).getArgNumber();
  });
}

int64_t alignedAt(int64_t base, int64_t offset) {
  return offset == 0 ? base : std::min(base, offset & -offset);
}

} // namespace

bool keepsPointer(Operation *op) {
  return llvm::isa<memref::SubViewOp, memref::ReinterpretCastOp, memref::ExpandShapeOp,
                   memref::CollapseShapeOp, memref::CastOp, memref::AssumeAlignmentOp>(op);
}

int64_t elementBytes(MemRefType type) {
  return std::max<int64_t>(1, (type.getElementTypeBitWidth() + 7) / 8);
}

HostBuffers::HostBuffers(ModuleOp module) {
  // Every use of a private host function's symbol: a direct call records
  // where it passes each argument; any other use makes its calls unknown.
  std::optional<SymbolTable::UseRange> uses = SymbolTable::getSymbolUses(&module.getBodyRegion());
  if (!uses)
    return;
  SymbolTable symbols(module);
  for (const SymbolTable::SymbolUse &use : *uses) {
    // Kernels' arguments are never a host buffer's root.
    auto fn = symbols.lookup<func::FuncOp>(use.getSymbolRef().getRootReference());
    if (!fn || fn.isPublic() || fn.isExternal() || fn->hasAttr("lcc.kernel"))
      continue;
    auto it = calls_.try_emplace(fn, SmallVector<func::CallOp>()).first;
    auto call = llvm::dyn_cast<func::CallOp>(use.getUser());
    if (!call || call.getCallee() != fn.getSymName())
      it->second.reset();
    else if (it->second)
      it->second->push_back(call);
  }
}

bool Extent::sameAs(const Extent &other) const {
  return at.root && at.root == other.at.root && at.offset == other.at.offset &&
         at.shifts == other.at.shifts && bytes == other.bytes;
}

HostBuffer HostBuffers::locate(Value memref) {
  std::optional<int64_t> bytes = offsetBytes(memref.getType());
  if (!bytes)
    return {};
  HostBuffer at;
  Value v = memref;
  while (Operation *def = v.getDefiningOp()) {
    if (auto view = llvm::dyn_cast<memref::ViewOp>(def)) {
      Value shift = view.getByteShift();
      if (std::optional<int64_t> known = getConstantIntValue(shift))
        *bytes += *known;
      else if (isEntryArgument(shift))
        at.shifts.push_back(shift);
      else
        return {};
      v = view.getSource();
    } else if (keepsPointer(def)) {
      v = def->getOperand(0);
    } else {
      return {};
    }
  }
  // A loop's iter_args may be any buffer: only a function's own arguments.
  if (!isEntryArgument(v))
    return {};
  sortShifts(at.shifts);
  at.root = v;
  at.offset = *bytes;
  return at;
}

Extent HostBuffers::extent(Value v) {
  auto type = llvm::dyn_cast<MemRefType>(v.getType());
  int64_t offset;
  SmallVector<int64_t> strides;
  if (!type || !type.hasStaticShape() || failed(type.getStridesAndOffset(strides, offset)) ||
      llvm::any_of(strides, ShapedType::isDynamic))
    return {};
  HostBuffer at = locate(v);
  if (!at.root)
    return {};
  int64_t span = type.getNumElements() == 0 ? 0 : 1;
  for (auto [size, stride] : llvm::zip(type.getShape(), strides))
    span += (size - 1) * stride;
  return {std::move(at), span * elementBytes(type)};
}

const std::vector<SmallVector<HostBuffers::Passed>> *HostBuffers::callsOf(func::FuncOp fn) {
  auto it = passed_.find(fn);
  if (it == passed_.end()) {
    std::optional<std::vector<SmallVector<Passed>>> found;
    auto known = calls_.find(fn);
    if (known != calls_.end() && known->second) {
      found.emplace();
      for (func::CallOp call : *known->second) {
        if (call->getParentOfType<func::FuncOp>() == fn) {
          found.reset();
          break;
        }
        SmallVector<Passed> &args = found->emplace_back();
        for (Value v : call.getOperands()) {
          Passed &p = args.emplace_back();
          if (llvm::isa<MemRefType>(v.getType()))
            p.at = locate(v);
          else if (!(p.constant = getConstantIntValue(v)) && isEntryArgument(v))
            p.argument = v;
        }
      }
    }
    it = passed_.try_emplace(fn, std::move(found)).first;
  }
  return it->second ? &*it->second : nullptr;
}

const std::vector<HostBuffers::Placed> *HostBuffers::placed(const HostBuffer &h) {
  SmallVector<const void *, 2> key{h.root.getAsOpaquePointer()};
  for (Value shift : h.shifts)
    key.push_back(shift.getAsOpaquePointer());
  auto it = placed_.find(key);
  if (it != placed_.end())
    return it->second ? &*it->second : nullptr;
  std::optional<std::vector<Placed>> found;
  auto arg = llvm::cast<BlockArgument>(h.root);
  std::optional<int64_t> own = offsetBytes(arg.getType());
  if (const std::vector<SmallVector<Passed>> *calls = callsOf(functionOf(h.root)); calls && own) {
    found.emplace();
    for (const SmallVector<Passed> &args : *calls) {
      Placed &p = found->emplace_back();
      const Passed &root = args[arg.getArgNumber()];
      if (!root.at.root)
        continue;
      // Positions inside the function count from the argument's aligned
      // pointer, which is the operand's (the same descriptor).
      p.at = root.at;
      p.at.offset -= *own;
      for (Value shift : h.shifts) {
        const Passed &by = args[llvm::cast<BlockArgument>(shift).getArgNumber()];
        if (by.constant) {
          p.at.offset += *by.constant;
        } else if (by.argument) {
          p.at.shifts.push_back(by.argument);
        } else {
          p.at = HostBuffer();
          break;
        }
      }
      sortShifts(p.at.shifts);
      p.plain = p.at.root && p.at.shifts.empty() && functionOf(p.at.root).isPublic();
    }
  }
  it = placed_.try_emplace(std::move(key), std::move(found)).first;
  return it->second ? &*it->second : nullptr;
}

int64_t HostBuffers::alignment(Value memref) { return alignment(locate(memref), 0); }

int64_t HostBuffers::alignment(const HostBuffer &h, int depth) {
  if (!h.root)
    return 1;
  if (functionOf(h.root).isPublic())
    return h.shifts.empty() ? alignedAt(kDeviceAllocation, h.offset) : 1;
  const std::vector<Placed> *calls = depth < kMaxDepth ? placed(h) : nullptr;
  if (!calls || calls->empty())
    return 1;
  int64_t known = kDeviceAllocation;
  for (const Placed &p : *calls) {
    if (p.plain) {
      known = std::min(known, alignedAt(kDeviceAllocation, p.at.offset + h.offset));
      continue;
    }
    HostBuffer at = p.at;
    at.offset += h.offset;
    known = std::min(known, alignment(at, depth + 1));
  }
  return known;
}

bool HostBuffers::mayOverlap(const Extent &a, const Extent &b) { return mayOverlap(a, b, 0); }

bool HostBuffers::mayOverlap(const Extent &a, const Extent &b, int depth) {
  const HostBuffer &x = a.at, &y = b.at;
  if (!x.root || !y.root)
    return true;
  if (x.root == y.root && x.shifts == y.shifts)
    return x.offset < y.offset + b.bytes && y.offset < x.offset + a.bytes;
  func::FuncOp fn = functionOf(x.root);
  if (fn != functionOf(y.root))
    return true;
  if (fn.isPublic())
    return x.root == y.root || !x.shifts.empty() || !y.shifts.empty();
  const std::vector<Placed> *xs = depth < kMaxDepth ? placed(x) : nullptr;
  const std::vector<Placed> *ys = xs ? placed(y) : nullptr;
  if (!xs || !ys)
    return true;
  for (auto [px, py] : llvm::zip(*xs, *ys)) {
    if (px.plain && py.plain) {
      int64_t lx = px.at.offset + x.offset, ly = py.at.offset + y.offset;
      if (px.at.root == py.at.root && lx < ly + b.bytes && ly < lx + a.bytes)
        return true;
      continue;
    }
    Extent cx{px.at, a.bytes}, cy{py.at, b.bytes};
    cx.at.offset += x.offset;
    cy.at.offset += y.offset;
    if (mayOverlap(cx, cy, depth + 1))
      return true;
  }
  return false;
}

} // namespace lcc
