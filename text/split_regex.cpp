#define PCRE2_CODE_UNIT_WIDTH 8
#include "text/split_regex.hpp"

#include <fmt/format.h>
#include <pcre2.h>
#include <utf8proc.h>

#include <cstdlib>

namespace dualpath::text {

struct split_regex::code {
  pcre2_code* re = nullptr;
  ~code() { pcre2_code_free(re); }
};

result<split_regex> split_regex::compile(const std::string& pattern, const std::string& origin) {
  int err = 0;
  PCRE2_SIZE at = 0;
  pcre2_code* re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP,
                                 &err, &at, nullptr);
  if (!re) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof(msg));
    return status(errc::bad_input,
                  fmt::format("{}: split pattern: {} at offset {}", origin, reinterpret_cast<const char*>(msg), at));
  }
  // JIT where the platform has it: matching is most of pre-tokenizing. Without it PCRE2 interprets.
  pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
  split_regex r;
  auto c = std::make_shared<code>();
  c->re = re;
  r.code_ = std::move(c);
  return r;
}

void split_regex::split(std::string_view text, const std::function<void(std::string_view)>& piece) const {
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(code_->re, nullptr);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0, gap = 0;  // where the next search starts; where the unmatched stretch began
  while (start < text.size()) {
    // The text was checked to be UTF-8 once, before it got here.
    const int rc = pcre2_match(code_->re, subject, text.size(), start, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc < 0) break;
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    size_t from = ov[0], to = ov[1];
    if (to == from) {  // an empty match: no piece; search again one character on
      start = from + 1;
      while (start < text.size() && (uint8_t(text[start]) & 0xc0) == 0x80) ++start;
      continue;
    }
    if (from > gap) piece(text.substr(gap, from - gap));
    piece(text.substr(from, to - from));
    start = gap = to;
  }
  if (gap < text.size()) piece(text.substr(gap));
  pcre2_match_data_free(md);
}

result<std::string> nfc(std::string_view text) {
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()), utf8proc_ssize_t(text.size()), &out,
                   utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) return status(errc::bad_input, std::string("NFC: ") + utf8proc_errmsg(n));
  std::string s(reinterpret_cast<const char*>(out), size_t(n));
  std::free(out);
  return s;
}

}  // namespace dualpath::text
