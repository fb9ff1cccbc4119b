// --format html: fills the report template (tools/dump/report/report.html)
// with its style, the charting library, the summary JSON and the page script
// (--compare: the comparison's JSON and its page script, compare.js).
// Nothing here computes a figure: the page script lays out what the JSON holds.
#include "tools/dump/html_output.h"

#include <string>

#include "lib/text/text.h"
#include "tools/dump/report_assets.h"

namespace dlprof::dump {
using namespace dlprof::text;
namespace {

std::string Asset(const unsigned char* bytes, size_t size) {
  return std::string(reinterpret_cast<const char*>(bytes), size);
}

// Text for HTML element content and attribute values.
std::string HtmlText(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

bool HtmlReportAvailable(std::string* why) {
  if (kReportLibraryMissing[0] == '\0') return true;
  *why = std::string("this dlprof-dump was built without the charting library of the HTML "
                     "report (npm packages chart.js, hammerjs, chartjs-plugin-zoom, "
                     "chartjs-chart-matrix; missing: ") +
         kReportLibraryMissing +
         "); install them with `npm ci --prefix tools/dump/report` (scripts/install-deps.sh) "
         "and build again";
  return false;
}

std::string JsonForScriptElement(const std::string& json) {
  std::string out;
  out.reserve(json.size() + json.size() / 16);
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else if (c == '\xe2' && i + 2 < json.size() && json[i + 1] == '\x80' &&
               (json[i + 2] == '\xa8' || json[i + 2] == '\xa9')) {
      // U+2028 and U+2029 (UTF-8 e2 80 a8/a9): line terminators to JavaScript.
      out += json[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

namespace {

// The template with its slots filled; `script` is the page script.
std::string FilledReport(const std::string& summary_json, const std::string& title,
                         const std::string& generator, const std::string& script) {
  std::string page = Asset(kReportTemplate, kReportTemplateSize);
  std::string meta = "{\"title\":";
  AppendJsonString(&meta, title);
  meta += ",\"generator\":";
  AppendJsonString(&meta, generator);
  meta += "}";
  const std::pair<std::string, std::string> slots[] = {
      {"@@TITLE@@", HtmlText(title)},
      {"@@STYLE@@", Asset(kReportStyle, kReportStyleSize)},
      {"@@LIBRARY@@", Asset(kReportLibrary, kReportLibrarySize)},
      {"@@META@@", JsonForScriptElement(meta)},
      {"@@SUMMARY@@", JsonForScriptElement(summary_json)},
      {"@@SCRIPT@@", script},
  };
  // The template is scanned once from start to end, so that no filled-in
  // text (the library, the data) is ever searched for a slot.
  std::string filled;
  size_t from = 0;
  for (;;) {
    size_t at = page.find("@@", from);
    size_t end = at == std::string::npos ? at : page.find("@@", at + 2);
    if (end == std::string::npos) break;
    const std::string slot = page.substr(at, end + 2 - at);
    filled.append(page, from, at - from);
    bool known = false;
    for (const auto& [name, text] : slots) {
      if (name == slot) {
        filled += text;
        known = true;
      }
    }
    if (!known) filled += slot;
    from = end + 2;
  }
  filled.append(page, from, std::string::npos);
  return filled;
}

}  // namespace

std::string HtmlReport(const std::string& summary_json, const std::string& title,
                       const std::string& generator, bool whole_run) {
  std::string script = Asset(kReportScript, kReportScriptSize);
  if (whole_run) script += Asset(kWholeRunScript, kWholeRunScriptSize);
  return FilledReport(summary_json, title, generator, script);
}

std::string HtmlCompareReport(const std::string& comparison_json, const std::string& title,
                              const std::string& generator) {
  return FilledReport(comparison_json, title, generator, Asset(kCompareScript, kCompareScriptSize));
}

}  // namespace dlprof::dump
