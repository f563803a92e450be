//===- Sharding.h - whole tensors <-> one rank's flat part ------*- C++ -*-===//
//
// ZeRO partitions a tensor flat (passes/shard/ShardUtils.h): flattened, zero-padded
// to a multiple of the part count N, cut into N equal pieces; rank r holds
// piece r. The runtime needs both directions: cutting whole tensors (initial
// parameters, a checkpoint written at another world size or sharding mode)
// into this rank's piece, and reassembling whole tensors from the pieces of
// every rank's checkpoint file. A checkpoint file says which piece each
// tensor is in its metadata, so files stay self-describing:
//   "lcc.shard.<name>" = "<parts>:<index>:<d0>x<d1>x..." (the whole shape),
//   followed by ":<dim>:<blocks>" for a split along one dimension, and by
//   "|" and the same for the tensor-parallel piece a ZeRO part was cut from
//   (a dp x tp grid: the whole tensor is cut by tp first, then by dp).
// A tensor without that entry is whole.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_SHARDING_H
#define LCC_RUNTIME_SHARDING_H

#include "runtime/support/Safetensors.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace lcc {

/// How a buffer holds one rank's part of a whole tensor (lcc.shard); the
/// rank with index r in `group` holds piece r of `parts`. Two layouts:
///  - flat (ZeRO, dim < 0): the whole tensor of `shape`, flattened and
///    zero-padded to a multiple of `parts`, cut into equal pieces;
///  - along `dim` (tensor parallelism): that dimension viewed as `blocks`
///    equal blocks, each cut into `parts` pieces; piece r is part r of every
///    block (the q, k and v of a fused projection each split by heads). With
///    one block the pieces are ceil(size / parts) long and the last ones
///    zero-padded (a vocabulary that does not divide over the ranks).
/// parts == 0: the buffer is the whole tensor. `within`, when set, is how
/// `shape` itself was cut from the whole tensor first (ZeRO's flat part of a
/// tensor-parallel piece, on a dp x tp grid).
struct ShardSpec {
  std::string group;
  int64_t parts = 0;
  std::vector<int64_t> shape;
  int64_t dim = -1;
  int64_t blocks = 1;
  std::shared_ptr<const ShardSpec> within;
  bool sharded() const { return parts > 0; }
  bool flat() const { return dim < 0; }
  /// The shape of the whole tensor (before `within` too).
  const std::vector<int64_t> &wholeShape() const { return within ? within->shape : shape; }
};

/// Whether the layout itself is well-formed (not its `within`): parts >= 1;
/// flat (dim -1), or a dimension of `shape` cut in `blocks` >= 1 blocks
/// that divide it into blocks x parts pieces exactly when there are several.
bool validShardSpec(const ShardSpec &spec);

/// Elements per piece: ceil(numel / parts) flat, else those of shardShape.
int64_t shardElements(const ShardSpec &spec);
/// The shape of a piece: [ceil(numel / parts)] flat, else the whole shape
/// with spec.dim divided by parts: rounded up for one block (the pieces past
/// the end are zero-padded, as a vocabulary split over ranks it does not
/// divide), exactly for several.
std::vector<int64_t> shardShape(const ShardSpec &spec);

/// Piece `index` of `whole` (of spec.shape); a flat piece is zero-padded at
/// the end.
HostTensor cutShard(const HostTensor &whole, const ShardSpec &spec, int64_t index);
/// The whole tensor from its pieces, in index order (inverse of cutShard).
HostTensor joinShards(const ShardSpec &spec, ElementType type,
                      const std::vector<const HostTensor *> &pieces);

/// This rank's buffer of a whole tensor: piece `withinIndex` of
/// spec.within (when set), then piece `index` of that.
HostTensor cutPiece(const HostTensor &whole, const ShardSpec &spec, int64_t index,
                    int64_t withinIndex);

/// The metadata key and value describing piece `index` of `spec` (taken from
/// piece `withinIndex` of spec.within, when set: "<value>|<within's value>").
std::string shardMetadataKey(const std::string &tensor);
std::string shardMetadataValue(const ShardSpec &spec, int64_t index, int64_t withinIndex = 0);

/// Merges the files of every rank of one checkpoint into whole tensors:
/// pieces are put back in index order, the padding dropped, the whole shape
/// restored; whole tensors are taken from the first file that has them.
/// Metadata (step, data seed) comes from the first file. Errors name the
/// tensor and what is missing or inconsistent.
Status assembleShards(const std::vector<SafetensorsFile> &files, SafetensorsFile &whole);

} // namespace lcc

#endif
