//===- OnnxTestModels.h - building ONNX graphs in tests --------*- C++ -*-===//
#ifndef LCC_TEST_UNIT_ONNX_ONNXTESTMODELS_H
#define LCC_TEST_UNIT_ONNX_ONNXTESTMODELS_H

#include "lcc_onnx.pb.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lcc::test {

inline void addInput(onnx::GraphProto &g, const std::string &name, std::vector<int64_t> dims,
                     int type = onnx::TensorProto::FLOAT) {
  onnx::ValueInfoProto *v = g.add_input();
  v->set_name(name);
  auto *t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(type);
  for (int64_t d : dims)
    t->mutable_shape()->add_dim()->set_dim_value(d);
}

inline void addNode(onnx::GraphProto &g, const std::string &op, std::vector<std::string> in,
                    std::vector<std::string> out, const std::string &name = "") {
  onnx::NodeProto *n = g.add_node();
  n->set_op_type(op);
  n->set_name(name.empty() ? op + "_0" : name);
  for (auto &s : in)
    n->add_input(s);
  for (auto &s : out)
    n->add_output(s);
}

inline void addIntAttribute(onnx::NodeProto &n, const std::string &name, int64_t value) {
  onnx::AttributeProto *a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

inline void addIntConstant(onnx::GraphProto &g, const std::string &name,
                           std::vector<int64_t> values, bool scalar = false) {
  onnx::NodeProto *n = g.add_node();
  n->set_op_type("Constant");
  n->add_output(name);
  auto *a = n->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  onnx::TensorProto *t = a->mutable_t();
  t->set_data_type(onnx::TensorProto::INT64);
  if (!scalar)
    t->add_dims(int64_t(values.size()));
  for (int64_t v : values)
    t->add_int64_data(v);
}

inline void addFloatInitializer(onnx::GraphProto &g, const std::string &name,
                                std::vector<int64_t> dims, std::vector<float> values) {
  onnx::TensorProto *t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims)
    t->add_dims(d);
  for (float v : values)
    t->add_float_data(v);
}

} // namespace lcc::test

#endif
