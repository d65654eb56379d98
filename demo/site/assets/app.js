// The single-page app of /app/: shows the view the path names and
// follows its links without a request to the server. Without this
// script, app/index.html shows every view at once.
(function () {
	"use strict";
	var root = document.querySelector(".spa");
	if (!root || !window.history || !history.pushState) {
		return;
	}
	var views = root.querySelectorAll(".view");

	function matches(pattern, path) {
		if (pattern.slice(-2) === "/*") {
			var prefix = pattern.slice(0, -1);
			return path.indexOf(prefix) === 0 && path.length > prefix.length && path.indexOf("/", prefix.length) < 0;
		}
		return pattern === path;
	}

	function show(path) {
		var shown = false;
		views.forEach(function (v) {
			var on = matches(v.getAttribute("data-view"), path);
			v.hidden = !on;
			shown = shown || on;
		});
		if (!shown) {
			views[0].hidden = false;
		}
		root.querySelectorAll(".here").forEach(function (e) { e.textContent = path; });
		var name = decodeURIComponent(path.split("/").pop());
		root.querySelectorAll(".colour-name").forEach(function (e) { e.textContent = name; });
		root.querySelectorAll(".tabs a").forEach(function (a) {
			a.classList.toggle("active", a.getAttribute("href") === path);
		});
	}

	root.addEventListener("click", function (e) {
		var a = e.target.closest("a");
		if (!a || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) {
			return;
		}
		var href = a.getAttribute("href");
		if (href.indexOf("/app/") !== 0 || href === "/app/index.html") {
			return;
		}
		e.preventDefault();
		history.pushState(null, "", href);
		show(href);
	});
	window.addEventListener("popstate", function () { show(location.pathname); });
	document.documentElement.classList.add("spa-on");
	show(location.pathname);
})();
