//===- OnnxOpsLoss.cpp - SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss -===//
//
// What the TorchScript exporter emits for F.cross_entropy / F.nll_loss, so a
// model exported together with its loss imports whole (--loss=NAME). Scores
// are [N, C] or [N, C, d1, ...], labels [N] or [N, d1, ...]:
//   l[n, d] = -w[t] * logp[n, t, d]    (t = labels[n, d]; w = 1 without weights;
//                                       w = 0 where t == ignore_index)
//   none: l;  sum: sum(l);  mean: sum(l) / sum(w)
// The picked entry is selected with a one-hot mask (iota == labels), so any
// label value is safe: an ignored label may be out of range.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxOps.h"

#include "lcc_onnx.pb.h"

#include "dialects/lcc/LccOps.h"

using namespace mlir;

namespace lcc::onnx_import {
namespace {

llvm::Error lossOp(NodeCtx &c, bool softmax) {
  std::vector<int64_t> scores = c.shape(0), labels = c.shape(1);
  Type et = c.type(0).getElementType();
  if (!llvm::isa<FloatType>(et) || !llvm::isa<IntegerType>(c.type(1).getElementType()))
    return c.unsupported("scores must be float and labels integer");
  if (scores.size() < 2 || labels.size() != scores.size() - 1 || labels[0] != scores[0] ||
      !std::equal(labels.begin() + 1, labels.end(), scores.begin() + 2))
    return c.error("labels must have the shape of the scores without dimension 1");
  std::string reduction = c.attrString("reduction", "mean");
  if (reduction != "mean" && reduction != "sum" && reduction != "none")
    return c.error("reduction '" + reduction + "' is not mean, sum or none");
  int64_t classes = scores[1];
  auto scalar = [&](double v) { return c.scalar(et, v); };
  auto scoresType = c.type(0);
  auto lossType = RankedTensorType::get(labels, et);

  Value logp = c.tensor(0);
  if (softmax)
    logp = lcc::LogSoftmaxOp::create(c.b, c.loc, logp, c.b.getI64IntegerAttr(1));
  // One-hot of the labels along dimension 1.
  Type it = c.type(1).getElementType();
  std::vector<int64_t> column(scores);
  column[1] = 1;
  Value ids = lcc::ReshapeOp::create(c.b, c.loc, RankedTensorType::get(column, it), c.tensor(1));
  Value iota = lcc::IotaOp::create(c.b, c.loc, RankedTensorType::get(scores, it),
                                   c.b.getI64IntegerAttr(1));
  Value hot = lcc::CmpOp::create(c.b, c.loc, RankedTensorType::get(scores, c.b.getI1Type()), iota,
                                 ids, c.b.getStringAttr("eq"));
  Value picked = lcc::WhereOp::create(c.b, c.loc, scoresType, hot, logp, scalar(0.0));
  Value loss = lcc::ReduceSumOp::create(c.b, c.loc, lossType, picked,
                                        c.b.getDenseI64ArrayAttr({1}), c.b.getBoolAttr(false));
  loss = lcc::NegOp::create(c.b, c.loc, loss);

  // Per-element weights: w[label], zero where the label is ignored.
  Value weight;
  if (c.has(2)) {
    if (c.shape(2) != std::vector<int64_t>{classes} || c.type(2).getElementType() != et)
      return c.error("weights must be [C] of the scores' type");
    weight = lcc::GatherOp::create(c.b, c.loc, lossType, c.tensor(2), c.tensor(1),
                                   c.b.getI64IntegerAttr(0));
  }
  if (const onnx::AttributeProto *ii = c.attr("ignore_index")) {
    HostTensor index(it.isInteger(64) ? ElementType::I64 : ElementType::I32, {});
    if (it.isInteger(64))
      index.data<int64_t>()[0] = ii->i();
    else
      index.data<int32_t>()[0] = int32_t(ii->i());
    Value keep = lcc::CmpOp::create(c.b, c.loc, RankedTensorType::get(labels, c.b.getI1Type()),
                                    c.tensor(1), c.materialize(index), c.b.getStringAttr("ne"));
    Value one = weight ? weight : scalar(1.0);
    weight = lcc::WhereOp::create(c.b, c.loc, lossType, keep, one, scalar(0.0));
  }
  if (weight)
    loss = lcc::MulOp::create(c.b, c.loc, lossType, loss, weight);

  if (reduction != "none") {
    std::vector<int64_t> all(labels.size());
    for (size_t d = 0; d < all.size(); ++d)
      all[d] = int64_t(d);
    auto scalarType = RankedTensorType::get({}, et);
    auto sum = [&](Value v, bool mean) -> Value {
      if (mean)
        return lcc::ReduceMeanOp::create(c.b, c.loc, scalarType, v, c.b.getDenseI64ArrayAttr(all),
                                         c.b.getBoolAttr(false));
      return lcc::ReduceSumOp::create(c.b, c.loc, scalarType, v, c.b.getDenseI64ArrayAttr(all),
                                      c.b.getBoolAttr(false));
    };
    if (reduction == "sum")
      loss = sum(loss, false);
    else if (!weight)
      loss = sum(loss, true);
    else
      loss = lcc::DivOp::create(c.b, c.loc, scalarType, sum(loss, false), sum(weight, false));
  }
  c.setOutput(0, loss);
  if (softmax && c.wantsOutput(1))
    c.setOutput(1, logp);
  return llvm::Error::success();
}

} // namespace

void addLossOps(std::vector<OpEntry> &t) {
  t.push_back({"SoftmaxCrossEntropyLoss", 12, [](NodeCtx &c) { return lossOp(c, true); }, {}, 2});
  t.push_back({"NegativeLogLikelihoodLoss", 12, [](NodeCtx &c) { return lossOp(c, false); }, {},
               2});
}

} // namespace lcc::onnx_import
