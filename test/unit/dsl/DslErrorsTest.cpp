//===- DslErrorsTest.cpp - malformed models give exact diagnostics --------===//
//
// Each case asserts the full one-line diagnostic, line:col included: the
// message is the frontend's user interface.
//
//===----------------------------------------------------------------------===//
#include "DslTestUtil.h"

#include <cstdlib>
#include <gtest/gtest.h>

using namespace lcc::dsl;
using namespace lcc::dsl::test;

namespace {

TEST(DslErrors, EmptyFile) {
  EXPECT_EQ(importError(""), "t.lcc:1:1: error: empty model file, expected at least "
                             "`model NAME { ... }` returning the loss");
  EXPECT_EQ(importError("# only a comment\n\n"),
            "t.lcc:3:1: error: empty model file, expected at least `model NAME { ... }` "
            "returning the loss");
}

TEST(DslErrors, BadToken) {
  EXPECT_EQ(importError("model m {\n  x = 3 $ 4\n}\n"),
            "t.lcc:2:9: error: unexpected character '$', it cannot start a token");
}

TEST(DslErrors, UnterminatedString) {
  EXPECT_EQ(importError("model m {\n  x = gelu(y, approximate=\"tanh)\n}\n"),
            "t.lcc:2:27: error: unterminated string, a string must close with '\"' on the "
            "same line");
}

TEST(DslErrors, UnterminatedBlock) {
  EXPECT_EQ(importError("model m {\n  param w: [2] = zeros\n  return sum(w)\n"),
            "t.lcc:4:1: error: unexpected end of file, expected '}' to close the body opened "
            "at 1:9");
}

TEST(DslErrors, MissingModel) {
  EXPECT_EQ(importError("config {\n  dim = 4\n}\n"),
            "t.lcc:4:1: error: no model defined, the file must contain `model NAME { ... }` "
            "whose body returns the loss");
}

TEST(DslErrors, UnknownIdentifier) {
  EXPECT_EQ(importError("model m {\n  param w: [2] = zeros\n  return sum(w * scale)\n}\n"),
            "t.lcc:3:18: error: unknown identifier 'scale', it is not a variable, parameter, "
            "input or config constant in scope");
}

TEST(DslErrors, UnknownNamesSuggestCloseOnes) {
  EXPECT_EQ(importError("config {\n  dim = 4\n}\nmodel m {\n  param w: [dimm] = zeros\n"
                        "  return sum(w)\n}\n"),
            "t.lcc:5:13: error: unknown identifier 'dimm', it is not a variable, parameter, "
            "input or config constant in scope (did you mean 'dim'?)");
  EXPECT_EQ(importError("model m {\n  param w: [4] = zeros\n  return mean(sofmax(w))\n}\n"),
            "t.lcc:3:15: error: unknown function 'sofmax', it is neither a builtin nor a block "
            "defined in this file (did you mean 'softmax'?)");
}

TEST(DslErrors, AddShapeMismatch) {
  EXPECT_EQ(importError("config {\n  dim = 64\n}\nmodel m {\n  param a: [4, 32, dim] = zeros\n"
                        "  param b: [32, dim + 1] = zeros\n  return mean(a + b)\n}\n"),
            "t.lcc:7:17: error: cannot add [4, 32, 64] and [32, 65], dimension -1 is 64 vs 65");
}

TEST(DslErrors, MatmulInnerMismatch) {
  EXPECT_EQ(importError("model m {\n  param x: [4, 32, 64] = zeros\n  param w: [65, 8] = zeros\n"
                        "  y = x @ w\n  return mean(y)\n}\n"),
            "t.lcc:4:9: error: cannot multiply [4, 32, 64] @ [65, 8], the inner dimensions 64 "
            "and 65 differ");
}

TEST(DslErrors, WrongArgumentCount) {
  EXPECT_EQ(importError("model m {\n  param x: [4] = zeros\n  return sum(gelu(x, \"tanh\", 3))\n"
                        "}\n"),
            "t.lcc:3:14: error: wrong number of arguments, 'gelu' takes 1 to 2 arguments "
            "(x, approximate) but got 3");
}

TEST(DslErrors, UnknownFunction) {
  EXPECT_EQ(importError("model m {\n  param x: [4] = zeros\n  return sum(swish(x))\n}\n"),
            "t.lcc:3:14: error: unknown function 'swish', it is neither a builtin nor a block "
            "defined in this file");
}

TEST(DslErrors, UndefinedBlock) {
  EXPECT_EQ(importError("model m {\n  param x: [4] = zeros\n  return sum(Mlp(x) as mlp)\n}\n"),
            "t.lcc:3:14: error: unknown block 'Mlp', no `block Mlp(...)` is defined in this "
            "file");
}

TEST(DslErrors, DuplicateParameter) {
  EXPECT_EQ(importError("block Norm(x) {\n  param weight: [4] = ones\n  return x * weight\n}\n"
                        "model m {\n  param x: [4] = zeros\n  y = Norm(Norm(x))\n"
                        "  return sum(y)\n}\n"),
            "t.lcc:7:7: error: duplicate parameter 'weight', it was already declared by the call "
            "at 7:12; give repeated block calls distinct names with `as`");
  EXPECT_EQ(importError("model m {\n  param w: [4] = zeros\n  param w: [2] = ones\n"
                        "  return sum(w)\n}\n"),
            "t.lcc:3:9: error: duplicate parameter 'w', it was already declared at 2:9; "
            "give repeated block calls distinct names with `as`");
}

TEST(DslErrors, MissingReturn) {
  EXPECT_EQ(importError("model m {\n  param x: [4] = zeros\n  y = sum(x)\n}\n"),
            "t.lcc:4:1: error: model 'm' does not return a value, its body must end with "
            "`return LOSS` (a scalar f32 tensor) or `return LOGITS`");
}

TEST(DslErrors, LossNotScalar) {
  EXPECT_EQ(importError("model m {\n  param x: [8] = zeros\n  return x * 2\n}\n"),
            "t.lcc:3:3: error: the model returns f32 tensor [8], it must return the loss (a "
            "scalar f32 tensor, shape []) or logits [..., vocab] for the default cross-entropy");
  // Logits without targets to compare them with.
  EXPECT_EQ(importError("model m {\n  param x: [4, 8] = zeros\n  return x * 2\n}\n"),
            "t.lcc:3:3: error: the model returns logits [4, 8] and no loss is chosen: no integer "
            "input has the shape [4]; declare `input targets: i32[4]` or write "
            "`train { loss = ... }`");
  EXPECT_EQ(importError("input a: i32[2, 4]\ninput b: i32[2, 4]\nmodel m {\n"
                        "  param w: [2, 4, 8] = zeros\n  return w\n}\n"),
            "t.lcc:5:3: error: the model returns logits [2, 4, 8] and no loss is chosen: several "
            "integer inputs have the shape [2, 4], so the targets are ambiguous; declare "
            "`input targets: i32[2, 4]` or write `train { loss = ... }`");
}

// The train section: each mistake names the setting or pattern at fault.
TEST(DslErrors, TrainSection) {
  const std::string model = "model m {\n  param w: [4] = ones\n  param b: [4] = zeros\n"
                            "  return sum(w * b)\n}\n";
  EXPECT_EQ(importError(model + "train {\n  frozn = \"w\"\n}\n"),
            "t.lcc:7:3: error: unknown train setting 'frozn' (did you mean 'frozen'?), the "
            "train section takes loss, frozen, no_decay and decay");
  EXPECT_EQ(importError(model + "train {\n  frozen = \"w\"\n  frozen = \"b\"\n}\n"),
            "t.lcc:8:3: error: train setting 'frozen' is set twice, the first is at 7:3");
  EXPECT_EQ(importError(model + "train {\n  frozen = [\"w\", \"h.*\"]\n}\n"),
            "t.lcc:7:12: error: pattern \"h.*\" in train.frozen matches no parameter");
  EXPECT_EQ(importError(model + "train {\n  frozen = \"W\"\n}\n"),
            "t.lcc:7:12: error: pattern \"W\" in train.frozen matches no parameter (did you "
            "mean 'w'?)");
  EXPECT_EQ(importError(model + "train {\n  frozen = [1]\n}\n"),
            "t.lcc:7:12: error: train.frozen takes parameter name patterns (strings such as "
            "\"h.*.attn.*\"), got integer 1");
  EXPECT_EQ(importError(model + "train {\n  frozen = \"[w\"\n}\n"),
            "t.lcc:7:12: error: bad pattern \"[w\" in train.frozen, invalid glob pattern, "
            "unmatched '['");
  EXPECT_EQ(importError(model + "train {\n  frozen = \"*\"\n}\n"),
            "t.lcc:7:3: error: every parameter is frozen, nothing would be trained; leave at "
            "least one parameter trainable");
  EXPECT_EQ(importError(model + "train {\n  decay = \"w\"; no_decay = [\"b\", \"?\"]\n}\n"),
            "t.lcc:7:27: error: parameter 'w' would be both decayed and not decayed: \"?\" in "
            "train.no_decay contradicts an earlier decay setting");
  EXPECT_EQ(importError(model + "train {\n  loss = output * w\n}\n"),
            "t.lcc:7:17: error: the train loss is f32 tensor [4], it must be a scalar f32 tensor "
            "(shape []); reduce it, for example with mean(x)");
  EXPECT_EQ(importError(model + "train {\n}\ntrain {\n}\n"),
            "t.lcc:8:1: error: second `train` section, a file has at most one (the first is at "
            "6:1)");
  EXPECT_EQ(importError("model m {\n  param w: [4] = ones froze\n  return sum(w)\n}\n"),
            "t.lcc:2:23: error: unexpected name 'froze', expected the end of the statement or a "
            "parameter flag (frozen, no_decay, decay)");
  EXPECT_EQ(importError("model m {\n  param w: [4] = ones decay no_decay\n  param v: [1] = ones\n"
                        "  return sum(w) + sum(v)\n}\n"),
            "t.lcc:2:29: error: param 'w' is flagged both decay and no_decay, keep one");
  EXPECT_EQ(importError("model m {\n  param w: [4] = ones frozen\n  return sum(w)\n}\n"),
            "t.lcc:2:9: error: every parameter is frozen, nothing would be trained; leave at "
            "least one parameter trainable");
}

TEST(DslErrors, ReshapeElementCount) {
  EXPECT_EQ(importError("model m {\n  param x: [4, 6] = zeros\n"
                        "  return mean(reshape(x, [5, 5]))\n}\n"),
            "t.lcc:3:15: error: cannot reshape [4, 6] (24 elements) to [5, 5] (25 elements), "
            "the element counts differ");
}

TEST(DslErrors, BadAxis) {
  EXPECT_EQ(importError("model m {\n  param x: [2, 3, 4] = zeros\n"
                        "  return mean(softmax(x, axis=3))\n}\n"),
            "t.lcc:3:31: error: axis 3 is out of range for the input of softmax of rank 3, "
            "valid axes are -3..2");
}

TEST(DslErrors, NonIntegerShape) {
  EXPECT_EQ(importError("config {\n  dim = 64\n}\nmodel m {\n  param w: [dim, dim / 2.0] = zeros\n"
                        "  return sum(w)\n}\n"),
            "t.lcc:5:22: error: non-integer dimension number 32 in the shape of param 'w', "
            "dimensions must be positive integers");
}

TEST(DslErrors, ConfigDivisionByZero) {
  EXPECT_EQ(importError("config {\n  heads = 0\n  head_dim = 64 / heads\n}\nmodel m {\n"
                        "  param w: [head_dim] = zeros\n  return sum(w)\n}\n"),
            "t.lcc:3:17: error: division by zero, the right side of '/' is 0");
}

TEST(DslErrors, ConfigInexactDivision) {
  EXPECT_EQ(importError("config {\n  head_dim = 64 / 5\n}\nmodel m {\n"
                        "  param w: [head_dim] = zeros\n  return sum(w)\n}\n"),
            "t.lcc:2:17: error: 64 / 5 is not an integer, '/' of two integers must divide "
            "exactly (use // to round down)");
}

TEST(DslErrors, TooDeepNesting) {
  std::string deep(300, '(');
  deep += "1";
  deep += std::string(300, ')');
  EXPECT_EQ(importError("model m {\n  x = " + deep + "\n}\n"),
            "t.lcc:2:106: error: nesting is too deep, expressions and blocks may nest at most "
            "100 levels");
}

TEST(DslErrors, LongOperatorChainIsBounded) {
  std::string chain = "1";
  for (int i = 0; i < 5000; ++i)
    chain += " + 1";
  std::string err = importError("model m {\n  x = " + chain + "\n}\n");
  EXPECT_NE(err.find("error: nesting is too deep"), std::string::npos) << err;
}

TEST(DslErrors, DeepNestingThroughBlocksIsBounded) {
  // Each block wraps the next call in 90 nested calls: each body is within the
  // parser's limit, but evaluating C nests 270 deep.
  auto wrap = [](std::string inner) {
    for (int i = 0; i < 90; ++i)
      inner = "exp(" + inner + ")";
    return inner;
  };
  std::string src = "block A(x) {\n  return " + wrap("x") + "\n}\nblock B(x) {\n  return " +
                    wrap("A(x)") + "\n}\nblock C(x) {\n  return " + wrap("B(x)") +
                    "\n}\nmodel m {\n  param w: [2] = zeros\n  return sum(C(w))\n}\n";
  std::string err = importError(src);
  EXPECT_NE(err.find("error: nesting is too deep, expressions nested through block calls may "
                     "nest at most 200 levels"), std::string::npos) << err;
}

TEST(DslErrors, BlockRecursion) {
  EXPECT_EQ(importError("block F(x) {\n  return F(x)\n}\nmodel m {\n  param w: [2] = zeros\n"
                        "  return sum(F(w))\n}\n"),
            "t.lcc:2:10: error: block calls nest too deeply (more than 64 levels), does block "
            "'F' call itself?");
}

TEST(DslErrors, BlockArgumentCount) {
  EXPECT_EQ(importError("block Lin(x, n) {\n  param w: [4, n] = zeros\n  return x @ w\n}\n"
                        "model m {\n  param x: [2, 4] = zeros\n  return mean(Lin(x, 3, 5))\n}\n"),
            "t.lcc:7:15: error: block 'Lin' takes 2 arguments, got 3");
}

TEST(DslErrors, UnknownKeywordArgument) {
  EXPECT_EQ(importError("model m {\n  param x: [2, 4] = zeros\n"
                        "  return mean(softmax(x, dim=-1))\n}\n"),
            "t.lcc:3:26: error: unknown keyword argument 'dim', 'softmax' takes 1 to 2 "
            "arguments (x, axis)");
}

TEST(DslErrors, CrossEntropyTargets) {
  EXPECT_EQ(importError("input targets: i32[4, 31]\nmodel m {\n  param logits: [4, 32, 256] = "
                        "zeros\n  return cross_entropy(logits, targets)\n}\n"),
            "t.lcc:4:10: error: cross_entropy targets [4, 31] do not match logits [4, 32, 256], "
            "expected targets [4, 32] (the logits without their last dimension)");
}

TEST(DslErrors, IntegerTensorArithmetic) {
  EXPECT_EQ(importError("input tokens: i32[4, 8]\nmodel m {\n  param w: [8] = zeros\n"
                        "  return mean(tokens * w)\n}\n"),
            "t.lcc:4:22: error: cannot multiply i32 tensor [4, 8] and f32 tensor [8], "
            "arithmetic needs f32 tensors (convert i32 with float(x))");
}

TEST(DslErrors, BadPermutation) {
  EXPECT_EQ(importError("model m {\n  param x: [2, 3, 4] = zeros\n"
                        "  return mean(transpose(x, [0, 2, 2]))\n}\n"),
            "t.lcc:3:28: error: invalid permutation [0, 2, 2] for a tensor of rank 3, it must "
            "list each of 0..2 exactly once");
}

TEST(DslErrors, LayerNormWeightShape) {
  EXPECT_EQ(importError("model m {\n  param x: [2, 64] = zeros\n  param w: [32] = ones\n"
                        "  param b: [64] = zeros\n  return mean(layer_norm(x, w, b))\n}\n"),
            "t.lcc:5:29: error: layer_norm weight has shape [32], expected [64] (the size of the "
            "input's last dimension)");
}

TEST(DslErrors, AsOnBuiltin) {
  EXPECT_EQ(importError("model m {\n  param x: [2] = zeros\n  return sum(gelu(x) as g)\n}\n"),
            "t.lcc:3:25: error: `as` names block instances, 'gelu' is a builtin function");
}

TEST(DslErrors, UnknownInitializer) {
  EXPECT_EQ(importError("model m {\n  param x: [2] = xavier(2)\n  return sum(x)\n}\n"),
            "t.lcc:2:18: error: unknown initializer, expected normal(mean, std), "
            "uniform(low, high), zeros, ones or full(value)");
}

TEST(DslErrors, StatementAfterReturn) {
  EXPECT_EQ(importError("model m {\n  param x: [2] = zeros\n  return sum(x)\n  y = x\n}\n"),
            "t.lcc:3:3: error: return must be the last statement of its body, the statements "
            "after it would never run");
}

TEST(DslErrors, AssignToConfig) {
  EXPECT_EQ(importError("config {\n  dim = 4\n}\nmodel m {\n  dim = 8\n"
                        "  param x: [dim] = zeros\n  return sum(x)\n}\n"),
            "t.lcc:5:3: error: cannot assign to 'dim', it is a config constant (override it "
            "from the command line)");
}

TEST(DslErrors, UnexpectedTokenInExpression) {
  EXPECT_EQ(importError("model m {\n  param x: [2] = zeros\n  return sum(x +)\n}\n"),
            "t.lcc:3:17: error: unexpected ')', expected an expression");
}

TEST(DslErrors, SliceOutOfRange) {
  EXPECT_EQ(importError("model m {\n  param x: [2, 8] = zeros\n  return sum(x[:, 4:9])\n}\n"),
            "t.lcc:3:19: error: slice 4:9 is out of range for dimension 1 of size 8, a slice "
            "must be a non-empty range inside the tensor");
  EXPECT_EQ(importError("model m {\n  param x: [2, 8] = zeros\n  return sum(x[2])\n}\n"),
            "t.lcc:3:16: error: index 2 is out of range for dimension 0 of size 2, indices "
            "count from 0 (or back from -1)");
}

// Hostile input never crashes: random bytes, truncations of a real model.
TEST(DslErrors, TruncatedModelsNeverCrash) {
  std::string src = readExample("gpt-tiny.lcc");
  for (size_t n = 0; n < src.size(); n += 7) {
    std::string err = importError(src.substr(0, n));
    EXPECT_NE(err, "") << n;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
}

// Random edits of the examples: whatever the result, the import either
// succeeds or reports one well-formed line.
TEST(DslErrors, MutatedModelsNeverCrash) {
  static const char alphabet[] = "{}()[]:,.=+-*/@<>#\"\n 0123456789axT_";
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  // LCC_DSL_FUZZ_ROUNDS raises the count for a longer run under the sanitizers.
  const char *env = std::getenv("LCC_DSL_FUZZ_ROUNDS");
  int rounds = env ? std::atoi(env) : 400;
  for (const char *file : {"gpt-tiny.lcc", "llama-tiny.lcc"}) {
    const std::string original = readExample(file);
    for (int round = 0; round < rounds; ++round) {
      std::string src = original;
      for (int edits = 1 + int(next() % 3); edits > 0; --edits) {
        size_t at = next() % src.size();
        switch (next() % 3) {
        case 0: src.erase(at, 1 + next() % 8); break;
        case 1: src.insert(at, 1, alphabet[next() % (sizeof alphabet - 1)]); break;
        default: src[at] = alphabet[next() % (sizeof alphabet - 1)]; break;
        }
      }
      std::string err = importError(src);
      if (err == "<imported>")
        continue;
      EXPECT_EQ(err.rfind("t.lcc:", 0), 0u) << err;
      EXPECT_NE(err.find(": error: "), std::string::npos) << err;
      EXPECT_EQ(err.find('\n'), std::string::npos) << err;
    }
  }
}

} // namespace
