//===- OnnxImporter.cpp - ONNX graphs into the lcc dialect ----------------===//
#include "frontends/onnx/OnnxImporter.h"
#include "frontends/onnx/OnnxInitializers.h"
#include "frontends/onnx/OnnxTies.h"
#include "frontends/onnx/OnnxOps.h"

#include "lcc_onnx.pb.h"

#include "dialects/lcc/LccDialect.h"
#include "dialects/lcc/LccOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/GlobPattern.h"

#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

using namespace mlir;

namespace lcc::onnx_import {

char UnsupportedOnnxError::ID = 0;

//===----------------------------------------------------------------------===//
// The op table
//===----------------------------------------------------------------------===//

static const std::vector<OpEntry> &opTable() {
  static const std::vector<OpEntry> table = [] {
    std::vector<OpEntry> t;
    addMathOps(t);
    addShapeOps(t);
    addLossOps(t);
    addHostOps(t);
    return t;
  }();
  return table;
}

/// The entry for `op` at `opset`: the one with the greatest `since` <= opset.
static const OpEntry *findOp(const std::string &op, int64_t opset) {
  const OpEntry *best = nullptr;
  for (const OpEntry &e : opTable())
    if (op == e.op && e.since <= opset && (!best || e.since > best->since))
      best = &e;
  return best;
}

bool isConstantOperand(const std::string &opType, int64_t opset, unsigned input) {
  const OpEntry *e = findOp(opType, opset);
  return e && llvm::is_contained(e->constantInputs, input);
}

std::vector<std::string> supportedOps(int64_t opset) {
  std::set<std::string> ops;
  for (const OpEntry &e : opTable())
    if (e.since <= opset)
      ops.insert(e.op);
  return {ops.begin(), ops.end()};
}

//===----------------------------------------------------------------------===//
// Host-tensor helpers
//===----------------------------------------------------------------------===//

std::optional<std::vector<int64_t>> broadcastShape(llvm::ArrayRef<int64_t> a,
                                                   llvm::ArrayRef<int64_t> b) {
  auto shape = lcc::broadcastShapes(a, b); // the dialect's rule, as a std::vector
  if (!shape)
    return std::nullopt;
  return std::vector<int64_t>(shape->begin(), shape->end());
}

int64_t broadcastIndex(const HostTensor &t, llvm::ArrayRef<int64_t> out, int64_t i) {
  const std::vector<int64_t> &shape = t.shape();
  int64_t index = 0, stride = 1;
  for (int64_t d = int64_t(out.size()) - 1, s = int64_t(shape.size()) - 1; s >= 0; --d, --s) {
    int64_t coord = i % out[d];
    i /= out[d];
    if (shape[s] != 1)
      index += coord * stride;
    stride *= shape[s];
  }
  return index;
}

std::vector<int64_t> toInts(const HostTensor &t) {
  std::vector<int64_t> v(t.numElements());
  for (int64_t i = 0; i < t.numElements(); ++i)
    v[i] = t.elementType() == ElementType::I64 ? t.data<int64_t>()[i] : int64_t(t.getDouble(i));
  return v;
}

std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  int64_t n = lcc::normalizeAxis(axis, rank);
  return n < 0 ? std::nullopt : std::optional<int64_t>(n);
}

//===----------------------------------------------------------------------===//
// NodeCtx
//===----------------------------------------------------------------------===//

bool NodeCtx::allConstant() const {
  for (ImportedValue *v : inputs)
    if (v && !v->constant)
      return false;
  return true;
}

llvm::Expected<const HostTensor *> NodeCtx::constant(unsigned i, const char *what) {
  if (!has(i))
    return error(llvm::Twine(what) + " (input " + llvm::Twine(i) + ") is missing");
  if (!inputs[i]->constant)
    return unsupported(llvm::Twine(what) + " (input '" + node.input(int(i)) +
                       "') must be known at compile time: lcc shapes are static");
  return &*inputs[i]->constant;
}

Type mlirElementType(MLIRContext *ctx, ElementType t) {
  switch (t) {
  case ElementType::F32:
    return Float32Type::get(ctx);
  case ElementType::F64:
    return Float64Type::get(ctx);
  case ElementType::I32:
    return IntegerType::get(ctx, 32);
  case ElementType::I64:
    return IntegerType::get(ctx, 64);
  case ElementType::I1:
    return IntegerType::get(ctx, 1);
  }
  return {};
}

ElementType hostElementType(Type t) {
  if (t.isF32())
    return ElementType::F32;
  if (t.isF64())
    return ElementType::F64;
  if (t.isInteger(1))
    return ElementType::I1;
  if (t.isInteger(32))
    return ElementType::I32;
  return ElementType::I64;
}

Type NodeCtx::elementType(ElementType t) const { return mlirElementType(b.getContext(), t); }

Value NodeCtx::materialize(const HostTensor &t) { return materializeConstant(b, loc, t); }

Value NodeCtx::scalar(Type et, double v) {
  HostTensor t(hostElementType(et), {});
  t.setDouble(0, v);
  return materialize(t);
}

llvm::Expected<std::optional<std::vector<int64_t>>> NodeCtx::axes(bool fromInput) {
  if (!fromInput)
    return attrInts("axes");
  if (!has(1))
    return std::optional<std::vector<int64_t>>();
  auto t = constant(1, "axes");
  if (!t)
    return t.takeError();
  return std::optional<std::vector<int64_t>>(toInts(**t));
}

Value materializeConstant(OpBuilder &b, Location loc, const HostTensor &t) {
  auto type = RankedTensorType::get(t.shape(), mlirElementType(b.getContext(), t.elementType()));
  int64_t n = t.numElements();
  const char *raw = static_cast<const char *>(t.rawData());
  size_t size = elementSize(t.elementType());
  bool splat = n > 0;
  for (int64_t i = 1; i < n && splat; ++i)
    splat = std::memcmp(raw, raw + i * size, size) == 0;
  DenseElementsAttr attr;
  auto values = [&](auto tag) {
    using T = decltype(tag);
    const T *p = t.data<T>();
    return splat ? DenseElementsAttr::get(type, llvm::ArrayRef<T>(p, 1))
                 : DenseElementsAttr::get(type, llvm::ArrayRef<T>(p, n));
  };
  switch (t.elementType()) {
  case ElementType::F32:
    attr = values(float());
    break;
  case ElementType::F64:
    attr = values(double());
    break;
  case ElementType::I32:
    attr = values(int32_t());
    break;
  case ElementType::I64:
    attr = values(int64_t());
    break;
  case ElementType::I1: {
    llvm::SmallVector<bool> bits(splat ? 1 : n);
    for (size_t i = 0; i < bits.size(); ++i)
      bits[i] = raw[i] != 0;
    attr = DenseElementsAttr::get(type, llvm::ArrayRef<bool>(bits));
    break;
  }
  }
  return lcc::ConstantOp::create(b, loc, attr);
}

Value NodeCtx::tensor(unsigned i) {
  ImportedValue *v = inputs[i];
  if (!v->tensor)
    v->tensor = materialize(*v->constant);
  return v->tensor;
}

RankedTensorType NodeCtx::type(unsigned i) const {
  ImportedValue *v = inputs[i];
  if (v->tensor)
    return llvm::cast<RankedTensorType>(v->tensor.getType());
  return RankedTensorType::get(v->constant->shape(), elementType(v->constant->elementType()));
}

std::vector<int64_t> NodeCtx::shape(unsigned i) const {
  auto s = type(i).getShape();
  return {s.begin(), s.end()};
}

const onnx::AttributeProto *NodeCtx::attr(const char *name) const {
  for (const onnx::AttributeProto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

int64_t NodeCtx::attrInt(const char *name, int64_t otherwise) const {
  const onnx::AttributeProto *a = attr(name);
  return a ? a->i() : otherwise;
}

double NodeCtx::attrFloat(const char *name, double otherwise) const {
  const onnx::AttributeProto *a = attr(name);
  return a ? double(a->f()) : otherwise;
}

std::string NodeCtx::attrString(const char *name, const std::string &otherwise) const {
  const onnx::AttributeProto *a = attr(name);
  return a ? a->s() : otherwise;
}

std::optional<std::vector<int64_t>> NodeCtx::attrInts(const char *name) const {
  const onnx::AttributeProto *a = attr(name);
  if (!a)
    return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

llvm::Error NodeCtx::checkShape(llvm::ArrayRef<int64_t> shape, bool host) const {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return error("a dimension would be negative (" + llvm::Twine(d) + ")");
    if (d > 0 && n > (int64_t(1) << 40) / d)
      return error("a tensor would have more than 2^40 elements");
    n *= d;
  }
  if (host && n > kMaxFoldElements)
    return unsupported("a compile-time constant of " + llvm::Twine(n) +
                       " elements is too large to fold");
  return llvm::Error::success();
}

unsigned NodeCtx::numOutputs() const { return unsigned(node.output_size()); }

bool NodeCtx::wantsOutput(unsigned i) const {
  return int(i) < node.output_size() && !node.output(int(i)).empty();
}

llvm::Error NodeCtx::error(const llvm::Twine &message) const {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 where + ": error: " + message.str());
}

llvm::Error NodeCtx::unsupported(const llvm::Twine &message) const {
  return llvm::make_error<UnsupportedOnnxError>(where + ": error: " + message.str());
}

//===----------------------------------------------------------------------===//
// The graph
//===----------------------------------------------------------------------===//

namespace {

/// "FILE: node 'NAME' (OP, opset N)", or "node #I" for unnamed nodes.
std::string describeNode(const OnnxModel &model, const onnx::NodeProto &node, int index) {
  std::string name = node.name().empty() ? "#" + std::to_string(index) : "'" + node.name() + "'";
  return model.path + ": node " + name + " (" + node.op_type() + ", opset " +
         std::to_string(model.opset) + ")";
}

/// Nodes in an order where every input is produced before use (ONNX requires
/// the file to be sorted already; exporters sometimes are not), or the first
/// node on a cycle.
llvm::Expected<std::vector<int>> topologicalOrder(const OnnxModel &model,
                                                  const std::set<std::string> &available) {
  const onnx::GraphProto &g = model.proto->graph();
  std::unordered_map<std::string, int> producer;
  for (int n = 0; n < g.node_size(); ++n)
    for (const std::string &out : g.node(n).output())
      if (!out.empty()) {
        if (available.count(out) || !producer.emplace(out, n).second)
          return onnxError(describeNode(model, g.node(n), n),
                           "output '" + out + "' is already defined (ONNX values are "
                                              "assigned once)");
      }
  std::vector<int> pending(g.node_size(), 0);
  std::vector<std::vector<int>> users(g.node_size());
  for (int n = 0; n < g.node_size(); ++n)
    for (const std::string &in : g.node(n).input()) {
      if (in.empty() || available.count(in))
        continue;
      auto it = producer.find(in);
      if (it == producer.end())
        return onnxError(describeNode(model, g.node(n), n),
                         "input '" + in +
                             "' is not a graph input, an initializer or any node's output");
      ++pending[n];
      users[it->second].push_back(n);
    }
  std::deque<int> ready;
  for (int n = 0; n < g.node_size(); ++n)
    if (!pending[n])
      ready.push_back(n);
  std::vector<int> order;
  while (!ready.empty()) {
    int n = ready.front();
    ready.pop_front();
    order.push_back(n);
    for (int u : users[n])
      if (--pending[u] == 0)
        ready.push_back(u);
  }
  if (int(order.size()) != g.node_size())
    for (int n = 0; n < g.node_size(); ++n)
      if (pending[n])
        return onnxError(describeNode(model, g.node(n), n),
                         "the graph has a cycle through this node");
  return order;
}

} // namespace

/// The static type of a graph input.
static llvm::Expected<RankedTensorType> inputType(const OnnxModel &model,
                                                  const onnx::ValueInfoProto &info,
                                                  const ImportOptions &options, OpBuilder &b) {
  std::string what = model.path + ": graph input '" + info.name() + "'";
  if (!info.type().has_tensor_type())
    return llvm::make_error<UnsupportedOnnxError>(
        what + ": error: only tensor inputs are supported (not sequences, maps or optionals)");
  const onnx::TypeProto::Tensor &t = info.type().tensor_type();
  std::optional<ElementType> et = elementTypeOf(t.elem_type());
  if (!et)
    return llvm::make_error<UnsupportedOnnxError>(
        what + ": error: element type " + onnxTypeName(t.elem_type()) +
        " is not supported (lcc has float, double, int32, int64 and bool tensors)");
  if (!t.has_shape())
    return onnxError(what, "has no shape; lcc needs the rank and static sizes");
  std::vector<int64_t> shape;
  for (int d = 0; d < t.shape().dim_size(); ++d) {
    const onnx::TensorShapeProto::Dimension &dim = t.shape().dim(d);
    if (dim.has_dim_value() && dim.dim_value() >= 0) {
      if (dim.dim_value() > (int64_t(1) << 40))
        return onnxError(what, "dimension " + llvm::Twine(d) + " is " +
                                   llvm::Twine(dim.dim_value()) + ", more than 2^40");
      shape.push_back(dim.dim_value());
      continue;
    }
    std::string name = dim.has_dim_param() ? dim.dim_param() : "";
    auto it = options.dims.find(name);
    if (!name.empty() && it != options.dims.end())
      shape.push_back(it->second);
    else if (d == 0 && options.batch > 0)
      shape.push_back(options.batch);
    else if (d == 1 && options.seq > 0)
      shape.push_back(options.seq);
    else
      return onnxError(what, "dimension " + llvm::Twine(d) +
                                 (name.empty() ? std::string(" is unknown")
                                               : " ('" + name + "') is symbolic") +
                                 "; give its size with " +
                                 (d == 0 ? "--batch" : d == 1 ? "--seq" : "--dim") +
                                 (name.empty() ? "" : " or --dim " + name + "=N"));
  }
  return RankedTensorType::get(shape, mlirElementType(b.getContext(), *et));
}

llvm::Expected<ImportedGraph>
importOnnx(const OnnxModel &model, MLIRContext &context, const ImportOptions &options) {
  context.loadDialect<lcc::LccDialect, func::FuncDialect>();
  const onnx::GraphProto &g = model.proto->graph();
  OpBuilder b(&context);
  Location fileLoc = FileLineColLoc::get(&context, model.path, 0, 0);
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  module->getOperation()->setAttr("lcc.model", b.getStringAttr(g.name()));

  std::map<std::string, ImportedValue> values;
  std::set<std::string> defined;
  // Initializers: float ones are parameters (arguments), the rest constants.
  std::vector<std::pair<std::string, RankedTensorType>> params, inputs;
  ImportedGraph imported;
  std::set<std::string> compileTime = compileTimeValues(g, model.opset);
  std::map<std::string, std::string> foldedFrom;
  std::optional<std::set<std::string>> signature = signatureParameters(g, &foldedFrom);
  // --trainable overrides the buffer signals (not compile-time uses: those
  // cannot be parameters).
  std::vector<llvm::GlobPattern> trainable;
  for (const std::string &text : options.trainable) {
    auto pattern = llvm::GlobPattern::create(text, /*MaxSubPatterns=*/1024);
    if (!pattern)
      return onnxError(model.path, "bad --trainable pattern '" + text +
                                       "': " + llvm::toString(pattern.takeError()));
    trainable.push_back(std::move(*pattern));
  }
  auto wantTrained = [&](const std::string &name) {
    return llvm::any_of(trainable, [&](const llvm::GlobPattern &p) { return p.match(name); });
  };
  std::set<std::string> overrides;
  auto overridden = [&](const std::string &name, const std::string &why) {
    if (overrides.insert(name).second)
      imported.notices.push_back("'" + name + "' is trained as --trainable asks, although it " +
                                 why);
  };
  for (const onnx::TensorProto &init : g.initializer()) {
    auto t = tensorFromProto(init, model.dir, model.path + ": initializer '" + init.name() + "'");
    if (!t)
      return t.takeError();
    if (!defined.insert(init.name()).second)
      return onnxError(model.path, "initializer '" + init.name() + "' is defined twice");
    // Exporters store constants as initializers too (the dynamo exporter's
    // -inf, 0.5, sqrt(2/pi)...): scalars are constants, not weights.
    // So are masks: a value no weight has, non-finite or float32's extreme
    // finite value (the dynamo exporter folds a causal mask filled with
    // torch.finfo(float32).min into an initializer), which training would
    // turn into a learned attention bias (weight decay alone makes -inf NaN).
    std::string buffer;
    bool isFloat = isFloatType(t->elementType());
    for (int64_t i = 0; isFloat && i < t->numElements() && buffer.empty(); ++i) {
      double v = t->getDouble(i);
      if (std::isnan(v))
        buffer = "holds NaN";
      else if (std::isinf(v))
        buffer = v < 0 ? "holds -inf (a mask)" : "holds +inf (a mask)";
      else if (std::fabs(v) >= double(std::numeric_limits<float>::max()))
        buffer = "holds float32's extreme value (a mask)";
    }
    if (isFloat && buffer.empty() && compileTime.count(init.name()))
      buffer = "is used only at compile time (shapes, positions, RoPE tables)";
    if (options.initializersAsParameters && isFloat && t->rank() > 0 && !buffer.empty() &&
        wantTrained(init.name())) {
      if (compileTime.count(init.name()))
        return onnxError(model.path, "--trainable matches initializer '" + init.name() +
                                         "', which is used only at compile time (shapes, "
                                         "positions, RoPE tables) and cannot be trained");
      overridden(init.name(), buffer);
      buffer.clear();
    }
    if (isFloat && t->rank() > 0 && !buffer.empty())
      imported.buffers.emplace_back(init.name(), buffer);
    if (options.initializersAsParameters && isFloat && t->rank() > 0 && buffer.empty()) {
      params.emplace_back(init.name(), RankedTensorType::get(
                                           t->shape(), mlirElementType(&context, t->elementType())));
      imported.parameters.emplace_back(init.name(), std::move(*t));
    } else {
      values[init.name()].constant = std::move(*t);
    }
  }
  // RoPE tables an exporter folded into initializers are buffers, and so is
  // whatever the exporter's graph signature does not call a parameter (the
  // specific reasons first: they say more).
  {
    std::set<size_t> constants;
    auto constant = [&](size_t i, const std::string &why) {
      const std::string &name = imported.parameters[i].first;
      if (wantTrained(name))
        overridden(name, why);
      else if (constants.insert(i).second)
        imported.buffers.emplace_back(name, why);
    };
    for (auto [self, other] : ropeTablePairs(imported.parameters))
      constant(self, "is a RoPE cos/sin table (its square plus '" +
                         imported.parameters[other].first + "''s is 1 everywhere)");
    for (size_t i = 0; signature && i < imported.parameters.size(); ++i)
      if (!signature->count(imported.parameters[i].first))
        constant(i, "is no parameter of the exported module (torch.export's graph signature)");
    for (auto it = constants.rbegin(); it != constants.rend(); ++it) {
      std::string name = imported.parameters[*it].first;
      values[name].constant = std::move(imported.parameters[*it].second);
      llvm::erase_if(params, [&](const auto &p) { return p.first == name; });
      imported.parameters.erase(imported.parameters.begin() + long(*it));
    }
  }
  for (size_t i = 0; i < trainable.size(); ++i) {
    auto matches = [&](const auto &entry) { return trainable[i].match(entry.first); };
    if (llvm::none_of(imported.parameters, matches) && llvm::none_of(imported.buffers, matches))
      return onnxError(model.path, "--trainable pattern '" + options.trainable[i] +
                                       "' matches no float initializer of rank >= 1 (a weight "
                                       "or a buffer) of the model");
  }
  // A tied embedding the exporter split (OnnxTies.h): its copy becomes a
  // transpose of the table, so both uses train one parameter.
  std::map<std::string, onnx_types::SplitTie> tiedCopies;
  if (!options.untie) {
    std::map<std::string, const HostTensor *> floats;
    for (auto &[name, t] : imported.parameters)
      if (t.elementType() == ElementType::F32)
        floats[name] = &t;
    auto ties = onnx_types::findSplitTies(
        g, [&](const onnx::TensorProto &init) -> std::optional<std::vector<float>> {
          auto it = floats.find(init.name());
          if (it == floats.end())
            return std::nullopt;
          return it->second->toVector<float>();
        });
    for (const onnx_types::SplitTie &tie : ties) {
      if (tiedCopies.count(tie.copy) || tiedCopies.count(tie.table))
        continue;
      tiedCopies[tie.copy] = tie;
      imported.notices.push_back("tied: '" + tie.copy + "' is '" + tie.table + "'" +
                              (tie.transposed ? " transposed" : "") +
                              ": trained as one parameter, as exported from a tied model "
                              "(--untie keeps them apart)");
    }
    auto isCopy = [&](const auto &p) { return tiedCopies.count(p.first) > 0; };
    llvm::erase_if(params, isCopy);
    llvm::erase_if(imported.parameters, isCopy);
  }
  for (std::string &warning : mergedParameterWarnings(g, imported.parameters))
    imported.notices.push_back(std::move(warning));
  for (const onnx::ValueInfoProto &in : g.input()) {
    if (defined.count(in.name()))
      continue; // IR < 4 lists initializers as inputs too
    defined.insert(in.name());
    auto known = options.constantInputs.find(in.name());
    if (known != options.constantInputs.end()) {
      values[in.name()].constant = known->second;
      continue;
    }
    auto type = inputType(model, in, options, b);
    if (!type)
      return type.takeError();
    inputs.emplace_back(in.name(), *type);
  }

  SmallVector<Type> argTypes;
  for (auto &[name, type] : params)
    argTypes.push_back(type);
  for (auto &[name, type] : inputs)
    argTypes.push_back(type);
  b.setInsertionPointToEnd(module->getBody());
  auto fn = func::FuncOp::create(b, fileLoc, options.functionName,
                                 b.getFunctionType(argTypes, {}));
  Block *body = fn.addEntryBlock();
  for (size_t i = 0; i < params.size(); ++i) {
    fn.setArgAttr(unsigned(i), "lcc.param", b.getStringAttr(params[i].first));
    if (auto it = foldedFrom.find(params[i].first); it != foldedFrom.end())
      fn.setArgAttr(unsigned(i), "lcc.folded_from", b.getStringAttr(it->second));
    values[params[i].first].tensor = body->getArgument(unsigned(i));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    unsigned a = unsigned(params.size() + i);
    fn.setArgAttr(a, "lcc.input", b.getStringAttr(inputs[i].first));
    values[inputs[i].first].tensor = body->getArgument(a);
  }
  b.setInsertionPointToEnd(body);
  for (const auto &[copy, tie] : tiedCopies) {
    Value table = values[tie.table].tensor;
    auto t = llvm::cast<RankedTensorType>(table.getType());
    values[copy].tensor =
        tie.transposed
            ? lcc::TransposeOp::create(
                  b, NameLoc::get(b.getStringAttr(copy), fileLoc),
                  RankedTensorType::get({t.getDimSize(1), t.getDimSize(0)}, t.getElementType()),
                  table, b.getDenseI64ArrayAttr({1, 0}))
                  .getResult()
            : table;
  }

  auto order = topologicalOrder(model, defined);
  if (!order)
    return order.takeError();
  for (int n : *order) {
    const onnx::NodeProto &node = g.node(n);
    std::string where = describeNode(model, node, n);
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      return llvm::make_error<UnsupportedOnnxError>(
          where + ": error: ops of domain '" + node.domain() + "' are not supported");
    const OpEntry *entry = findOp(node.op_type(), model.opset);
    if (!entry)
      return llvm::make_error<UnsupportedOnnxError>(
          where + ": error: op " + node.op_type() + " is not supported at opset " +
          std::to_string(model.opset) + " (docs/onnx.md lists the supported ops)");
    std::vector<ImportedValue *> ins;
    for (const std::string &in : node.input())
      ins.push_back(in.empty() ? nullptr : &values.at(in));
    // Handlers may rely on their required inputs being present.
    int required = entry->requiredInputs;
    if (required < 0)
      required = std::max(1, int(ins.size()));
    for (int i = 0; i < required; ++i)
      if (i >= int(ins.size()) || !ins[i])
        return onnxError(where, "input " + llvm::Twine(i) + " is required");
    Location loc = NameLoc::get(b.getStringAttr(locationName(node)), fileLoc);
    NodeCtx ctx(node, model, b, loc, std::move(ins), where);
    if (llvm::Error err = entry->handler(ctx))
      return std::move(err);
    for (int o = 0; o < node.output_size(); ++o) {
      if (node.output(o).empty())
        continue;
      if (size_t(o) >= ctx.outputs.size() ||
          (!ctx.outputs[o].tensor && !ctx.outputs[o].constant))
        return llvm::make_error<UnsupportedOnnxError>(
            where + ": error: output " + std::to_string(o) + " ('" + node.output(o) +
            "') is not supported");
      values[node.output(o)] = std::move(ctx.outputs[o]);
    }
  }

  SmallVector<Value> results;
  for (const onnx::ValueInfoProto &out : g.output()) {
    auto it = values.find(out.name());
    if (it == values.end())
      return onnxError(model.path, "graph output '" + out.name() + "' is never computed");
    ImportedValue &v = it->second;
    if (!v.tensor)
      v.tensor = materializeConstant(b, fileLoc, *v.constant);
    results.push_back(v.tensor);
  }
  func::ReturnOp::create(b, fileLoc, results);
  fn.setFunctionType(b.getFunctionType(argTypes, ValueRange(results).getTypes()));
  if (failed(verify(*module)))
    return onnxError(model.path, "the imported graph does not verify (an importer bug; the "
                                 "diagnostic above says where)");
  imported.module = std::move(module);
  return imported;
}

} // namespace lcc::onnx_import
