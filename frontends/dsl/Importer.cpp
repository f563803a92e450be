//===- Importer.cpp - shape-checked graph -> lcc dialect -----------------===//
//
// All checking happened in Sema; this file only spells the graph as MLIR.
// Ops are built generically by name ("lcc." + mnemonic) from the typed node
// attributes, so adding a builtin needs no importer change; the final
// mlir::verify catches any mismatch with the ODS definitions.
//
//===----------------------------------------------------------------------===//
#include "frontends/dsl/Importer.h"

#include "dialects/lcc/LccDialect.h"
#include "dialects/lcc/LccOps.h"
#include "frontends/dsl/Parser.h"
#include "frontends/dsl/Sema.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;

namespace lcc::dsl {

int64_t paramSeed(uint64_t globalSeed, llvm::StringRef paramName) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&](uint8_t byte) {
    h ^= byte;
    h *= 0x100000001b3ull;
  };
  for (int i = 0; i < 8; ++i)
    mix(uint8_t(globalSeed >> (8 * i)));
  for (char c : paramName)
    mix(uint8_t(c));
  return int64_t(h & 0x7fffffffffffffffull);
}

namespace {

class ModuleBuilder {
public:
  ModuleBuilder(const Graph &g, llvm::StringRef filename, MLIRContext &ctx, uint64_t seed)
      : g(g), filename(filename), ctx(ctx), b(&ctx), seed(seed) {}

  OwningOpRef<ModuleOp> build() {
    OwningOpRef<ModuleOp> module = ModuleOp::create(loc(g.modelLoc));
    module->getOperation()->setAttr("lcc.model", b.getStringAttr(g.modelName));
    auto dictionary = [&](const std::vector<ConfigValue> &values) {
      SmallVector<NamedAttribute> attrs;
      for (const ConfigValue &c : values) {
        Attribute a = c.isString  ? Attribute(b.getStringAttr(c.s))
                      : c.isBool  ? Attribute(b.getBoolAttr(c.i != 0))
                      : c.isFloat ? Attribute(b.getF64FloatAttr(c.f))
                                  : Attribute(b.getI64IntegerAttr(c.i));
        attrs.push_back(b.getNamedAttr(c.name, a));
      }
      return b.getDictionaryAttr(attrs);
    };
    module->getOperation()->setAttr("lcc.config", dictionary(g.config));
    if (!g.hfArchitecture.empty()) {
      module->getOperation()->setAttr(
          "lcc.hf",
          b.getDictionaryAttr({b.getNamedAttr("architecture", b.getStringAttr(g.hfArchitecture)),
                               b.getNamedAttr("config", dictionary(g.hfConfig))}));
    }
    b.setInsertionPointToEnd(module->getBody());
    buildInit();
    buildForward();
    return module;
  }

private:
  const Graph &g;
  llvm::StringRef filename;
  MLIRContext &ctx;
  OpBuilder b;
  uint64_t seed;

  Location loc(SrcLoc l) { return FileLineColLoc::get(&ctx, filename, l.line, l.col); }
  /// An op's location: its source position, named by the loop iterations it
  /// was made in when there are any ("h.3.", Graph.h).
  Location loc(const Node &n) {
    Location at = loc(n.loc);
    return n.layer.empty() ? at : NameLoc::get(StringAttr::get(&ctx, n.layer), at);
  }

  Type elementType(DType t) {
    switch (t) {
    case DType::F32: return b.getF32Type();
    case DType::I32: return b.getI32Type();
    case DType::I64: return b.getI64Type();
    case DType::I1: return b.getI1Type();
    }
    return b.getF32Type();
  }
  RankedTensorType tensorType(const TensorType &t) {
    return RankedTensorType::get(t.shape, elementType(t.dtype));
  }
  RankedTensorType paramType(const ParamInfo &p) {
    return RankedTensorType::get(p.shape, b.getF32Type());
  }

  Operation *create(llvm::StringRef op, Location l, ValueRange operands, Type result,
                    ArrayRef<NamedAttribute> attrs) {
    OperationState state(l, ("lcc." + op).str());
    state.addOperands(operands);
    state.addTypes(result);
    state.addAttributes(attrs);
    return b.create(state);
  }

  void buildInit() {
    SmallVector<Type> results;
    for (const ParamInfo &p : g.params)
      results.push_back(paramType(p));
    auto fn = func::FuncOp::create(b, loc(g.modelLoc), "init", b.getFunctionType({}, results));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(fn.addEntryBlock());
    SmallVector<mlir::Value> values;
    for (const ParamInfo &p : g.params) {
      // Named after the parameter ("h.3.attn.c_attn.weight"), so that
      // lcc-outline-layers finds the repeated layers' initializers too.
      Location at = NameLoc::get(b.getStringAttr(p.name), loc(p.loc));
      SmallVector<mlir::Value> operands;
      SmallVector<NamedAttribute> attrs;
      const char *op = "fill";
      if (p.init == ParamInfo::Normal) {
        op = "random_normal";
        attrs = {b.getNamedAttr("mean", b.getF64FloatAttr(p.a)),
                 b.getNamedAttr("std", b.getF64FloatAttr(p.b))};
      } else if (p.init == ParamInfo::Uniform) {
        op = "random_uniform";
        attrs = {b.getNamedAttr("low", b.getF64FloatAttr(p.a)),
                 b.getNamedAttr("high", b.getF64FloatAttr(p.b))};
      } else {
        attrs = {b.getNamedAttr("value", b.getF64FloatAttr(p.a))};
      }
      if (p.init != ParamInfo::Fill)
        operands.push_back(
            arith::ConstantOp::create(b, at, b.getI64IntegerAttr(paramSeed(seed, p.name))));
      values.push_back(create(op, at, operands, paramType(p), attrs)->getResult(0));
    }
    func::ReturnOp::create(b, loc(g.modelLoc), values);
  }

  Attribute nodeAttr(const NodeAttr &a) {
    switch (a.kind) {
    case NodeAttr::Int: return b.getI64IntegerAttr(a.i);
    case NodeAttr::Float: return b.getF64FloatAttr(a.f);
    case NodeAttr::Bool: return b.getBoolAttr(a.b);
    case NodeAttr::Str: return b.getStringAttr(a.s);
    case NodeAttr::Ints: return b.getDenseI64ArrayAttr(a.ints);
    }
    return {};
  }

  void buildForward() {
    SmallVector<Type> args;
    for (const ParamInfo &p : g.params)
      args.push_back(paramType(p));
    for (const InputInfo &in : g.inputs)
      args.push_back(tensorType(in.type));
    Type loss = RankedTensorType::get({}, b.getF32Type());
    auto fn = func::FuncOp::create(b, loc(g.modelLoc), "forward", b.getFunctionType(args, loss));
    size_t np = g.params.size();
    for (size_t i = 0; i < np; ++i) {
      const ParamInfo &p = g.params[i];
      fn.setArgAttr(i, "lcc.param", b.getStringAttr(p.name));
      // The passes' contract (docs/training.md): frozen gets no gradient and no
      // state; the decay attributes override the rank rule.
      if (p.frozen)
        fn.setArgAttr(i, "lcc.frozen", b.getUnitAttr());
      if (p.decay == ParamInfo::NoDecay)
        fn.setArgAttr(i, "lcc.no_decay", b.getUnitAttr());
      if (p.decay == ParamInfo::ForceDecay)
        fn.setArgAttr(i, "lcc.decay", b.getUnitAttr());
    }
    for (size_t i = 0; i < g.inputs.size(); ++i)
      fn.setArgAttr(np + i, "lcc.input", b.getStringAttr(g.inputs[i].name));
    SmallVector<Location> argLocs;
    for (const ParamInfo &p : g.params)
      argLocs.push_back(loc(p.loc));
    for (const InputInfo &in : g.inputs)
      argLocs.push_back(loc(in.loc));
    Block *entry = b.createBlock(&fn.getBody(), {}, args, argLocs);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(entry);

    std::vector<mlir::Value> values(g.nodes.size());
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node &n = g.nodes[i];
      if (n.kind == NodeKind::Param) {
        values[i] = entry->getArgument(n.index);
        continue;
      }
      if (n.kind == NodeKind::Input) {
        values[i] = entry->getArgument(np + n.index);
        continue;
      }
      SmallVector<mlir::Value> operands;
      for (int o : n.operands)
        operands.push_back(values[o]);
      RankedTensorType type = tensorType(n.type);
      SmallVector<NamedAttribute> attrs;
      if (n.op == "constant") {
        const NodeAttr &v = n.attrs.front();
        Attribute dense =
            n.type.dtype == DType::F32   ? DenseElementsAttr::get(type, float(v.f))
            : n.type.dtype == DType::I32 ? DenseElementsAttr::get(type, int32_t(v.i))
                                         : DenseElementsAttr::get(type, int64_t(v.i));
        attrs.push_back(b.getNamedAttr("value", dense));
      } else {
        for (const NodeAttr &a : n.attrs)
          attrs.push_back(b.getNamedAttr(a.name, nodeAttr(a)));
      }
      values[i] = create(n.op, loc(n), operands, type, attrs)->getResult(0);
    }
    func::ReturnOp::create(b, loc(g.modelLoc), values[g.result]);
  }
};

llvm::Error diagError(const std::string &message) {
  return llvm::make_error<llvm::StringError>(message, llvm::inconvertibleErrorCode());
}

} // namespace

llvm::Expected<OwningOpRef<ModuleOp>> importDsl(llvm::StringRef source, llvm::StringRef filename,
                                                MLIRContext &context,
                                                const ImportOptions &options) {
  Diag diag(filename.str());
  std::vector<Token> tokens;
  if (!lex(std::string_view(source.data(), source.size()), diag, tokens))
    return diagError(diag.message());
  std::unique_ptr<File> file = parse(tokens, diag);
  if (!file)
    return diagError(diag.message());
  Graph graph;
  if (!analyze(*file, options.overrides, diag, graph))
    return diagError(diag.message());

  context.loadDialect<lcc::LccDialect, arith::ArithDialect, func::FuncDialect,
                      tensor::TensorDialect>();
  OwningOpRef<ModuleOp> module = ModuleBuilder(graph, filename, context, options.seed).build();

  // Sema should have rejected anything the verifiers reject; if not, report
  // the verifier's words instead of handing on invalid IR.
  std::string verifierMessage;
  {
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
      if (verifierMessage.empty()) {
        verifierMessage = d.str();
        if (auto fl = llvm::dyn_cast<FileLineColLoc>(d.getLocation()))
          verifierMessage = std::to_string(fl.getLine()) + ":" +
                            std::to_string(fl.getColumn()) + ": " + verifierMessage;
      }
      return success();
    });
    if (failed(verify(*module)))
      return diagError(filename.str() + ":1:1: error: internal error in the DSL importer, the "
                       "generated IR does not verify: " + verifierMessage);
  }
  return module;
}

} // namespace lcc::dsl
