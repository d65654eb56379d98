// Figure 1 sample script: served through the compress filter.
(function () {
  "use strict";

  function entry(text) {
    var li = document.createElement("li");
    li.textContent = text;
    document.getElementById("log").appendChild(li);
  }

  function describe(name) {
    var found = performance.getEntriesByName(new URL(name, location.href).href)[0];
    if (!found) {
      entry(name + ": no timing entry");
      return;
    }
    var sent = found.encodedBodySize, size = found.decodedBodySize;
    if (sent && size && sent < size) {
      entry(name + ": " + size + " bytes sent as " + sent + " (compressed)");
    } else {
      entry(name + ": " + size + " bytes, sent as they are");
    }
  }

  window.addEventListener("load", function () {
    ["/", "/css/site.css", "/js/app.js"].forEach(describe);
    entry("document loaded at " + new Date().toISOString());
  });
})();
