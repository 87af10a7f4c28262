// beirx review: keyboard shortcuts (served by the app; the page allows no inline script).
(function () {
  "use strict";
  var form = document.getElementById("rating");
  if (!form) { return; }
  var keys = {};
  form.querySelectorAll("input[data-key]").forEach(function (input) { keys[input.dataset.key] = input; });
  function editing(target) {
    return target && (target.tagName === "TEXTAREA" || (target.tagName === "INPUT" && target.type === "text"));
  }
  function save() {
    var missing = ["adequacy", "fluency"].filter(function (name) {
      return !form.querySelector("input[name=" + name + "]:checked");
    });
    if (missing.length) {
      var note = document.getElementById("error") || document.createElement("p");
      note.id = "error"; note.className = "error"; note.setAttribute("role", "alert");
      note.textContent = "rate " + missing.join(" and ") + " first";
      form.parentNode.insertBefore(note, form);
      return;
    }
    form.requestSubmit ? form.requestSubmit() : form.submit();
  }
  document.addEventListener("keydown", function (event) {
    if (editing(event.target)) {
      if (event.key === "Escape") { event.target.blur(); }
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) { event.preventDefault(); save(); }
      return;
    }
    if (event.altKey || event.ctrlKey || event.metaKey) { return; }
    var key = event.key.toLowerCase();
    if (keys[key]) { keys[key].checked = true; event.preventDefault(); return; }
    if (event.key === "Enter") { event.preventDefault(); save(); return; }
    if (event.key === "ArrowRight" && form.dataset.next) { window.location.href = form.dataset.next; return; }
    if (event.key === "ArrowLeft" && form.dataset.previous) { window.location.href = form.dataset.previous; return; }
    if (key === "c") { event.preventDefault(); document.getElementById("correction_text").focus(); }
  });
}());
