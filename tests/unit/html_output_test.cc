// The HTML report's page (tools/dump/html_output.h) without a browser: the
// summary JSON made safe inside its <script> element, and the template's
// slots each filled once with the embedded files. test_html_report.py loads
// real reports in headless Chromium.
#include "tools/dump/html_output.h"

#include <gtest/gtest.h>

#include <string>

namespace dlprof::dump {
namespace {

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(JsonForScriptElement, EscapesWhatCouldEndOrConfuseTheElement) {
  EXPECT_EQ(JsonForScriptElement(R"({"path":"/d/a</script><script>x</SCRIPT>"})"),
            R"({"path":"/d/a\u003c/script\u003e\u003cscript\u003ex\u003c/SCRIPT\u003e"})");
  EXPECT_EQ(JsonForScriptElement(R"(["<!--","-->","&amp;"])"),
            R"(["\u003c!--","--\u003e","\u0026amp;"])");
  // U+2028 and U+2029 (e2 80 a8, e2 80 a9) as escapes; other UTF-8 as is.
  EXPECT_EQ(JsonForScriptElement("[\"a\xe2\x80\xa8" "b\xe2\x80\xa9" "c\"]"),
            "[\"a\\u2028b\\u2029c\"]");
  EXPECT_EQ(JsonForScriptElement("[\"\xc3\xa9\xe2\x82\xac\xe2\x80\"]"),
            "[\"\xc3\xa9\xe2\x82\xac\xe2\x80\"]");  // é, €, a cut sequence at the end
  EXPECT_EQ(JsonForScriptElement(R"({"n":[1,2.5,-3],"t":true})"), R"({"n":[1,2.5,-3],"t":true})");
}

TEST(HtmlReport, FillsEachSlotOnceAndEscapesTheTitle) {
  std::string why;
  if (!HtmlReportAvailable(&why)) GTEST_SKIP() << why;
  // Text that looks like a slot, inside the data, stays as it is.
  const std::string json = R"({"files":{"/d/@@SCRIPT@@</script>":{}}})";
  const std::string page = HtmlReport(json, "traces <&\"'>", "dlprof-dump test");
  EXPECT_EQ(Count(page, "@@SCRIPT@@"), 1u);  // the one in the data
  EXPECT_NE(page.find(R"("/d/@@SCRIPT@@\u003c/script\u003e")"), std::string::npos);
  EXPECT_EQ(Count(page, "@@"), 2u);
  EXPECT_EQ(Count(page, "traces &lt;&amp;&quot;&#39;&gt;"), 2u);  // <title> and the header
  EXPECT_EQ(Count(page, "traces <&"), 0u);
  EXPECT_NE(page.find(R"(<script type="application/json" id="dlprof-meta">{"title":"traces \u003c\u0026\"'\u003e","generator":"dlprof-dump test"}</script>)"),
            std::string::npos);
  // The page's own script, the library (Chart.js) and the policy that
  // forbids every request.
  EXPECT_NE(page.find("window.dlprofKit"), std::string::npos);
  EXPECT_NE(page.find("Chart.js"), std::string::npos);
  EXPECT_NE(page.find("default-src 'none'"), std::string::npos);
  EXPECT_EQ(page.find("sourceMappingURL"), std::string::npos);
  // Only the JSON elements and the two scripts end a <script>.
  EXPECT_EQ(Count(page, "</script>"), 4u);
}

}  // namespace
}  // namespace dlprof::dump
