// HMAC proofs of the cluster secret (docs/design.md §13).
#include "core/secret.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstdlib>
#include <vector>

#include "core/status.hpp"

namespace dualpath {

namespace {

std::string hex(const unsigned char* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    out.push_back(digits[p[i] >> 4]);
    out.push_back(digits[p[i] & 15]);
  }
  return out;
}

const char* label(secret_purpose p) {
  switch (p) {
    case secret_purpose::registry: return "dualpath registry v1";
    case secret_purpose::control: return "dualpath control v1";
  }
  return "";
}

}  // namespace

std::string secret_proof(const std::string& secret, secret_purpose purpose) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  const std::string msg = label(purpose);
  if (!HMAC(EVP_sha256(), secret.data(), int(secret.size()), reinterpret_cast<const unsigned char*>(msg.data()),
            msg.size(), mac, &len))
    throw std::runtime_error("HMAC-SHA256 failed");
  return hex(mac, len);
}

bool proof_matches(const std::string& expected, const std::string& received) {
  // Proofs have a fixed length, so comparing lengths first leaks nothing about the secret.
  if (expected.empty() || expected.size() != received.size()) return false;
  return CRYPTO_memcmp(expected.data(), received.data(), expected.size()) == 0;
}

std::string generate_secret() {
  std::vector<unsigned char> bytes(32);
  if (RAND_bytes(bytes.data(), int(bytes.size())) != 1)
    throw std::runtime_error("no random bytes for the cluster secret");
  return hex(bytes.data(), bytes.size());
}

std::string given_secret(const std::string& explicit_secret) {
  if (!explicit_secret.empty()) return explicit_secret;
  const char* env = std::getenv(secret_env);
  return env ? std::string(env) : std::string();
}

}  // namespace dualpath
