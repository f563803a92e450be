//===- Sharding.cpp - whole tensors <-> one rank's flat part --------------===//
#include "runtime/Sharding.h"

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

int64_t shardElements(const ShardSpec &spec) {
  return (product(spec.shape) + spec.parts - 1) / spec.parts;
}

HostTensor cutShard(const HostTensor &whole, const ShardSpec &spec, int64_t index) {
  int64_t per = shardElements(spec);
  HostTensor part(whole.elementType(), {per});
  size_t es = elementSize(whole.elementType());
  int64_t begin = index * per;
  int64_t end = std::min(whole.numElements(), begin + per);
  if (end > begin)
    std::memcpy(part.rawData(), static_cast<const uint8_t *>(whole.rawData()) + size_t(begin) * es, size_t(end - begin) * es);
  return part;
}

std::string shardMetadataKey(const std::string &tensor) { return "lcc.shard." + tensor; }

std::string shardMetadataValue(const ShardSpec &spec, int64_t index) {
  std::string v = std::to_string(spec.parts) + ":" + std::to_string(index) + ":";
  for (size_t i = 0; i < spec.shape.size(); ++i)
    v += (i ? "x" : "") + std::to_string(spec.shape[i]);
  return v;
}

/// Parses "<parts>:<index>:<d0>x<d1>..." (an empty shape is a scalar).
static bool parseShardValue(const std::string &v, ShardSpec &spec, int64_t &index) {
  auto number = [](const std::string &s, int64_t &out) {
    if (s.empty() || s.size() > 15 || s.find_first_not_of("0123456789") != std::string::npos)
      return false;
    out = std::strtoll(s.c_str(), nullptr, 10);
    return true;
  };
  size_t a = v.find(':'), b = a == std::string::npos ? a : v.find(':', a + 1);
  if (b == std::string::npos || !number(v.substr(0, a), spec.parts) ||
      !number(v.substr(a + 1, b - a - 1), index) || spec.parts < 1 || index >= spec.parts)
    return false;
  spec.shape.clear();
  std::string dims = v.substr(b + 1);
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
  return true;
}

bool assembleShards(const std::vector<SafetensorsFile> &files, SafetensorsFile &whole,
                    std::string &error) {
  whole = SafetensorsFile();
  if (files.empty())
    return error = "no checkpoint files to assemble", false;
  whole.metadata = files[0].metadata;
  for (auto it = whole.metadata.begin(); it != whole.metadata.end();)
    it = it->first.rfind("lcc.shard.", 0) == 0 ? whole.metadata.erase(it) : std::next(it);
  struct Pieces {
    ShardSpec spec;
    ElementType type = ElementType::F32;
    std::map<int64_t, const HostTensor *> byIndex;
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
      int64_t index = 0;
      if (!parseShardValue(meta->second, spec, index))
        return error = "bad piece description '" + meta->second + "' of '" + name + "'", false;
      Pieces &p = sharded[name];
      if (p.byIndex.empty()) {
        p.spec = spec;
        p.type = t.elementType();
      } else if (p.spec.parts != spec.parts || p.spec.shape != spec.shape ||
                 p.type != t.elementType()) {
        return error = "the pieces of '" + name + "' disagree on their layout", false;
      }
      if (t.shape() != std::vector<int64_t>{shardElements(spec)})
        return error = "piece " + std::to_string(index) + " of '" + name + "' has the wrong size",
               false;
      p.byIndex[index] = &t;
    }
  for (auto &[name, p] : sharded) {
    if (int64_t(p.byIndex.size()) != p.spec.parts)
      return error = "the checkpoint has " + std::to_string(p.byIndex.size()) + " of the " +
                     std::to_string(p.spec.parts) + " pieces of '" + name +
                     "' (a rank's file is missing)", false;
    HostTensor t(p.type, p.spec.shape);
    size_t es = elementSize(p.type);
    int64_t per = shardElements(p.spec), total = t.numElements();
    for (auto &[index, piece] : p.byIndex) {
      int64_t begin = index * per, end = std::min(total, begin + per);
      if (end > begin)
        std::memcpy(static_cast<uint8_t *>(t.rawData()) + size_t(begin) * es, piece->rawData(), size_t(end - begin) * es);
    }
    whole.tensors[name] = std::move(t);
  }
  return true;
}

} // namespace lcc
