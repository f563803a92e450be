//===- Sharding.cpp - whole tensors <-> one rank's flat part --------------===//
#include "runtime/support/Sharding.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>

namespace lcc {

static int64_t product(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// ceil(n / parts) for n >= 0, parts >= 1, without overflow.
static int64_t ceilDiv(int64_t n, int64_t parts) { return n / parts + (n % parts != 0); }

bool validShardSpec(const ShardSpec &spec) {
  if (spec.parts < 1)
    return false;
  // Sizes (read from files) whose element arithmetic fits in 64 bits: no
  // negative dimension, and the product of the non-zero ones representable,
  // so that no partial product of the dimensions overflows either.
  int64_t n = 1;
  for (int64_t d : spec.shape)
    if (d < 0 || (d > 0 && __builtin_mul_overflow(n, d, &n)))
      return false;
  if (spec.flat())
    return spec.dim == -1;
  int64_t rank = int64_t(spec.shape.size()), pieces = 0;
  return spec.dim < rank && spec.blocks >= 1 &&
         (spec.blocks == 1 || (!__builtin_mul_overflow(spec.blocks, spec.parts, &pieces) &&
                               spec.shape[size_t(spec.dim)] % pieces == 0));
}

int64_t shardElements(const ShardSpec &spec) {
  if (!spec.flat())
    return product(shardShape(spec));
  return ceilDiv(product(spec.shape), spec.parts);
}

std::vector<int64_t> shardShape(const ShardSpec &spec) {
  if (spec.flat())
    return {shardElements(spec)};
  std::vector<int64_t> shape = spec.shape;
  int64_t &size = shape[size_t(spec.dim)];
  // One block: ceil, the last pieces padded (a vocabulary that does not
  // divide); blocks divide exactly.
  size = spec.blocks == 1 ? ceilDiv(size, spec.parts) : size / spec.parts;
  return shape;
}

/// Calls copy(wholeOffset, pieceOffset, elements) for each contiguous run of
/// piece `index` (offsets in elements).
template <typename Fn>
static void forEachRun(const ShardSpec &spec, int64_t index, Fn copy) {
  if (spec.flat()) {
    int64_t per = shardElements(spec), total = product(spec.shape);
    int64_t begin = index * per, end = std::min(total, begin + per);
    if (end > begin)
      copy(begin, int64_t(0), end - begin);
    return;
  }
  // dim viewed as [blocks, parts, width]: piece r is [:, r, :] of every block.
  // With one block the width is rounded up, and piece r holds what is left
  // of the dimension past r * width (its padding stays zero).
  int64_t outer = 1, inner = 1, d = spec.dim;
  for (int64_t i = 0; i < d; ++i)
    outer *= spec.shape[size_t(i)];
  for (size_t i = size_t(d) + 1; i < spec.shape.size(); ++i)
    inner *= spec.shape[i];
  int64_t size = spec.shape[size_t(d)], piece = shardShape(spec)[size_t(d)];
  int64_t width = piece / spec.blocks;
  int64_t rows = spec.blocks > 1 ? width : std::max<int64_t>(0, std::min(width, size - index * width));
  // Nothing to copy: no runs at all (a shape may be empty along another
  // dimension and still have large ones, which must not be looped over).
  if (rows == 0 || outer == 0 || inner == 0)
    return;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t b = 0; b < spec.blocks; ++b)
      copy((o * size + b * (size / spec.blocks) + index * width) * inner,
           (o * piece + b * width) * inner, rows * inner);
}

HostTensor cutShard(const HostTensor &whole, const ShardSpec &spec, int64_t index) {
  HostTensor part(whole.elementType(), shardShape(spec));
  size_t es = elementSize(whole.elementType());
  const auto *from = static_cast<const uint8_t *>(whole.rawData());
  auto *to = static_cast<uint8_t *>(part.rawData());
  forEachRun(spec, index, [&](int64_t w, int64_t p, int64_t n) {
    std::memcpy(to + size_t(p) * es, from + size_t(w) * es, size_t(n) * es);
  });
  return part;
}

HostTensor joinShards(const ShardSpec &spec, ElementType type,
                      const std::vector<const HostTensor *> &pieces) {
  HostTensor whole(type, spec.shape);
  size_t es = elementSize(type);
  auto *to = static_cast<uint8_t *>(whole.rawData());
  for (int64_t r = 0; r < spec.parts; ++r) {
    const auto *from = static_cast<const uint8_t *>(pieces[size_t(r)]->rawData());
    forEachRun(spec, r, [&](int64_t w, int64_t p, int64_t n) {
      std::memcpy(to + size_t(w) * es, from + size_t(p) * es, size_t(n) * es);
    });
  }
  return whole;
}

std::string shardMetadataKey(const std::string &tensor) { return "lcc.shard." + tensor; }

HostTensor cutPiece(const HostTensor &whole, const ShardSpec &spec, int64_t index,
                    int64_t withinIndex) {
  if (!spec.within)
    return cutShard(whole, spec, index);
  return cutShard(cutShard(whole, *spec.within, withinIndex), spec, index);
}

std::string shardMetadataValue(const ShardSpec &spec, int64_t index, int64_t withinIndex) {
  std::string v = std::to_string(spec.parts) + ":" + std::to_string(index) + ":";
  for (size_t i = 0; i < spec.shape.size(); ++i)
    v += (i ? "x" : "") + std::to_string(spec.shape[i]);
  if (!spec.flat())
    v += ":" + std::to_string(spec.dim) + ":" + std::to_string(spec.blocks);
  if (spec.within)
    v += "|" + shardMetadataValue(*spec.within, withinIndex, 0);
  return v;
}

static bool parseOneShardValue(const std::string &v, ShardSpec &spec, int64_t &index);

/// Parses "<parts>:<index>:<d0>x<d1>...[:<dim>:<blocks>]", then optionally
/// "|" and the same for the cut it was taken from (`within`).
static bool parseShardValue(const std::string &v, ShardSpec &spec, int64_t &index,
                            int64_t &withinIndex) {
  size_t bar = v.find('|');
  withinIndex = 0;
  if (!parseOneShardValue(v.substr(0, bar), spec, index))
    return false;
  spec.within.reset();
  if (bar == std::string::npos)
    return true;
  auto inner = std::make_shared<ShardSpec>();
  if (!parseOneShardValue(v.substr(bar + 1), *inner, withinIndex) ||
      shardShape(*inner) != spec.shape)
    return false;
  spec.within = std::move(inner);
  return true;
}

/// Parses "<parts>:<index>:<d0>x<d1>..." (an empty shape is a scalar).
static bool parseOneShardValue(const std::string &v, ShardSpec &spec, int64_t &index) {
  auto number = [](const std::string &s, int64_t &out) {
    if (s.empty() || s.size() > 15 || s.find_first_not_of("0123456789") != std::string::npos)
      return false;
    out = std::strtoll(s.c_str(), nullptr, 10);
    return true;
  };
  size_t a = v.find(':'), b = a == std::string::npos ? a : v.find(':', a + 1);
  spec.dim = -1;
  spec.blocks = 1;
  if (b == std::string::npos || !number(v.substr(0, a), spec.parts) ||
      !number(v.substr(a + 1, b - a - 1), index) || spec.parts < 1 || index >= spec.parts)
    return false;
  spec.shape.clear();
  std::string dims = v.substr(b + 1);
  // Optional ":<dim>:<blocks>" (a split along one dimension).
  if (size_t c = dims.find(':'); c != std::string::npos) {
    size_t c2 = dims.find(':', c + 1);
    if (c2 == std::string::npos || !number(dims.substr(c + 1, c2 - c - 1), spec.dim) ||
        !number(dims.substr(c2 + 1), spec.blocks) || spec.blocks < 1)
      return false;
    dims = dims.substr(0, c);
  }
  for (size_t pos = 0; !dims.empty() && pos <= dims.size();) {
    size_t x = dims.find('x', pos);
    if (x == std::string::npos)
      x = dims.size();
    int64_t d;
    if (!number(dims.substr(pos, x - pos), d))
      return false;
    spec.shape.push_back(d);
    pos = x + 1;
  }
  return validShardSpec(spec);
}

Status assembleShards(const std::vector<SafetensorsFile> &files, SafetensorsFile &whole) {
  whole = SafetensorsFile();
  if (files.empty())
    return Status::failure("no checkpoint files to assemble");
  whole.metadata = files[0].metadata;
  for (auto it = whole.metadata.begin(); it != whole.metadata.end();)
    it = it->first.rfind("lcc.shard.", 0) == 0 ? whole.metadata.erase(it) : std::next(it);
  struct Pieces {
    ShardSpec spec;
    ElementType type = ElementType::F32;
    std::map<std::pair<int64_t, int64_t>, const HostTensor *> byIndex; // (within, index)
  };
  auto sameLayout = [](const ShardSpec &a, const ShardSpec &b) {
    return a.parts == b.parts && a.shape == b.shape && a.dim == b.dim && a.blocks == b.blocks;
  };
  std::map<std::string, Pieces> sharded;
  for (const SafetensorsFile &f : files)
    for (const auto &[name, t] : f.tensors) {
      auto meta = f.metadata.find(shardMetadataKey(name));
      if (meta == f.metadata.end()) {
        whole.tensors.emplace(name, t); // whole: the first file's copy wins
        continue;
      }
      ShardSpec spec;
      int64_t index = 0, withinIndex = 0;
      if (!parseShardValue(meta->second, spec, index, withinIndex))
        return Status::failure("bad piece description '" + meta->second + "' of '" + name + "'");
      Pieces &p = sharded[name];
      if (p.byIndex.empty()) {
        p.spec = spec;
        p.type = t.elementType();
      } else if (!sameLayout(p.spec, spec) || bool(p.spec.within) != bool(spec.within) ||
                 (spec.within && !sameLayout(*p.spec.within, *spec.within)) ||
                 p.type != t.elementType()) {
        return Status::failure("the pieces of '" + name + "' disagree on their layout");
      }
      if (t.shape() != shardShape(spec))
        return Status::failure("piece " + std::to_string(index) + " of '" + name +
                               "' has the wrong size");
      p.byIndex[{withinIndex, index}] = &t;
    }
  for (auto &[name, p] : sharded) {
    int64_t outer = p.spec.within ? p.spec.within->parts : 1, count = 0;
    if (__builtin_mul_overflow(p.spec.parts, outer, &count))
      count = INT64_MAX; // (more pieces than any checkpoint has)
    if (int64_t(p.byIndex.size()) != count)
      return Status::failure("the checkpoint has " + std::to_string(p.byIndex.size()) + " of the " +
                             std::to_string(count) + " pieces of '" + name +
                             "' (a rank's file is missing)");
    // Pieces of each outer piece first (ZeRO's parts of a tensor-parallel
    // piece), then the outer pieces.
    std::vector<HostTensor> middle;
    for (int64_t w = 0; w < outer; ++w) {
      std::vector<const HostTensor *> pieces;
      for (int64_t r = 0; r < p.spec.parts; ++r)
        pieces.push_back(p.byIndex.at({w, r}));
      middle.push_back(joinShards(p.spec, p.type, pieces));
    }
    if (!p.spec.within) {
      whole.tensors[name] = std::move(middle[0]);
      continue;
    }
    std::vector<const HostTensor *> pieces;
    for (const HostTensor &m : middle)
      pieces.push_back(&m);
    whole.tensors[name] = joinShards(*p.spec.within, p.type, pieces);
  }
  return {};
}

} // namespace lcc
