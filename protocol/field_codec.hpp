#pragma once
// What every codec of protocol/ shares: building and reading envelopes, lists, and the fields that map one
// to one onto a struct's members. Such fields are listed once per message, in a tuple of DP_FIELD entries
// that both write_fields and read_fields walk, so an encoder and its decoder cannot drift apart.
#include <capnp/message.h>

#include <cstdint>
#include <tuple>
#include <type_traits>
#include <vector>

#include "protocol/enum_codec.hpp"
#include "protocol/type_ids.hpp"

namespace dualpath::protocol {

// One field: the member of T and the setter and getter of the Cap'n Proto struct that carry it.
template <class T, class Builder, class Reader, class V, class W>
struct field_map {
  V T::*member;
  void (Builder::*set)(W);
  W (Reader::*get)() const;
};

template <class T, class Builder, class Reader, class V, class W>
field_map<T, Builder, Reader, V, W> field(V T::*member, void (Builder::*set)(W), W (Reader::*get)() const) {
  return {member, set, get};
}

// DP_FIELD(member, Name): T::member <-> S's setName/getName, with `T` (the struct) and `S` (the schema
// struct) in scope. Cap'n Proto spells accessors in camel case, so the name is given once more.
#define DP_FIELD(member, Name) ::dualpath::protocol::field(&T::member, &S::Builder::set##Name, &S::Reader::get##Name)

// Enums cross through enum_codec.hpp; every other member converts to its wire type implicitly.
template <class V>
decltype(auto) to_wire(const V& v) {
  if constexpr (std::is_enum_v<V>) {
    return to_schema(v);
  } else {
    return (v);
  }
}

template <class W>
auto from_wire(W w) {
  if constexpr (std::is_enum_v<W>) {
    return from_schema(w);
  } else {
    return w;
  }
}

template <class Builder, class T, class Fields>
void write_fields(Builder b, const T& x, const Fields& fields) {
  std::apply([&](const auto&... f) { ((b.*f.set)(to_wire(x.*f.member)), ...); }, fields);
}

template <class Reader, class T, class Fields>
void read_fields(Reader r, T& x, const Fields& fields) {
  std::apply([&](const auto&... f) { ((x.*f.member = from_wire((r.*f.get)())), ...); }, fields);
}

template <class List, class T>
void put_list(List list, const std::vector<T>& v) {
  for (size_t i = 0; i < v.size(); ++i) list.set(uint32_t(i), v[i]);
}

template <class T, class List>
std::vector<T> get_list(List list) {
  std::vector<T> v;
  v.reserve(list.size());
  for (auto x : list) v.push_back(T(x));
  return v;
}

// A message with root Schema, filled by fill(root builder).
template <class Schema, class Fill>
envelope<Schema> build_envelope(Fill&& fill) {
  capnp::MallocMessageBuilder m;
  fill(m.initRoot<Schema>());
  return to_envelope<Schema>(m);
}

// What read(root reader) makes of an envelope.
template <class Schema, class Read>
auto read_envelope(const envelope<Schema>& e, Read&& read) {
  envelope_reader<Schema> reader(e);
  return read(reader.root());
}

// Messages made of mapped fields only: `Fields` lists them all.
template <class Schema, class T, class Fields>
envelope<Schema> encode_fields(const T& x, const Fields& fields) {
  return build_envelope<Schema>([&](typename Schema::Builder b) { write_fields(b, x, fields); });
}

template <class T, class Schema, class Fields>
T decode_fields(const envelope<Schema>& e, const Fields& fields) {
  return read_envelope(e, [&](typename Schema::Reader r) {
    T x;
    read_fields(r, x, fields);
    return x;
  });
}

}  // namespace dualpath::protocol
