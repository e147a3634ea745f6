/* beonet view: draws the embedded data as SVG; click a node for its plan, two
   nodes for their proven paths, fail mode for what a failure cuts. Every text
   from the data goes in through textContent or setAttribute, never as markup. */
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var D = JSON.parse(document.getElementById("data").textContent);
  var svg = document.getElementById("canvas");
  var nodeEls = [], hubEls = [], edgeEls = [];
  var edgeOf = {};      /* "vertex>vertex" -> the (last) drawn edge joining them */
  var state = { a: -1, b: -1, failMode: false, family: 4 };
  var nNodes = D.nodes ? D.nodes.length : 0;
  /* The plan's IP families, IPv4 first where it has it (D.routing.families; absent: IPv4 only) */
  var families = (D.routing && D.routing.families) || [4];
  state.family = families[0];
  var pathLayer = null;

  function el(tag, attrs, parent) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs) { if (Object.prototype.hasOwnProperty.call(attrs, k)) e.setAttribute(k, attrs[k]); }
    if (parent) parent.appendChild(e);
    return e;
  }
  function html(tag, text, parent, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    if (parent) parent.appendChild(e);
    return e;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function title(parent, text) { el("title", {}, parent).textContent = text; }

  /* --- zoom and pan: the viewBox --- */
  var view = (D.groups ? D.groups.box : D.box).slice();
  function setView() { svg.setAttribute("viewBox", view.join(" ")); }
  svg.addEventListener("wheel", function (ev) {
    ev.preventDefault();
    var f = ev.deltaY > 0 ? 1.2 : 1 / 1.2, r = svg.getBoundingClientRect();
    var px = view[0] + view[2] * (ev.clientX - r.left) / r.width;
    var py = view[1] + view[3] * (ev.clientY - r.top) / r.height;
    view = [px - (px - view[0]) * f, py - (py - view[1]) * f, view[2] * f, view[3] * f];
    setView();
  }, { passive: false });
  var drag = null;
  svg.addEventListener("mousedown", function (ev) { drag = [ev.clientX, ev.clientY, view[0], view[1]]; });
  window.addEventListener("mouseup", function () { drag = null; });
  window.addEventListener("mousemove", function (ev) {
    if (!drag) return;
    var r = svg.getBoundingClientRect();
    view[0] = drag[2] - (ev.clientX - drag[0]) * view[2] / r.width;
    view[1] = drag[3] - (ev.clientY - drag[1]) * view[3] / r.height;
    setView();
  });

  /* --- drawing --- */
  function drawEdges(layer) {
    D.edges.forEach(function (e, i) {
      var g = el("g", { "class": "edge " + e[0], "data-i": i }, layer);
      el("line", { x1: e[3], y1: e[4], x2: e[5], y2: e[6], "class": "hit" }, g);
      el("line", { x1: e[3], y1: e[4], x2: e[5], y2: e[6], "class": "line", "stroke-width": 1.5 * e[8] }, g);
      title(g, vname(e[1]) + " \u2013 " + vname(e[2]) + (e[7] ? " (" + e[7] + ")" : ""));
      g.addEventListener("click", function (ev) { ev.stopPropagation(); onEdge(i); });
      edgeEls.push(g);
      edgeOf[e[1] + ">" + e[2]] = edgeOf[e[2] + ">" + e[1]] = i;
    });
  }
  function drawHubs(layer) {
    D.hubs.forEach(function (h, i) {
      var g = el("g", { "class": "hub " + h[1], "data-i": nNodes + i }, layer);
      var bar = h[5];
      if (bar) {
        var vert = bar[0] === bar[2];
        for (var k = 0; k < h[6]; k++) {
          var o = k * 6;
          el("line", { x1: bar[0] + (vert ? o : 0), y1: bar[1] + (vert ? 0 : o),
                       x2: bar[2] + (vert ? o : 0), y2: bar[3] + (vert ? 0 : o), "class": "bar" }, g);
        }
        var t = el("text", { x: vert ? bar[0] : bar[2] + 8, y: vert ? bar[1] - 8 : bar[3] + 4,
                             "class": "hublabel", "text-anchor": vert ? "middle" : "start" }, g);
        t.textContent = h[2][0];
      } else if (h[1] === "switch") {
        el("rect", { x: h[3] - 12, y: h[4] - 12, width: 24, height: 24, "class": "shape",
                     transform: "rotate(45 " + h[3] + " " + h[4] + ")" }, g);
        el("text", { x: h[3], y: h[4] - 20, "class": "hublabel", "text-anchor": "middle" }, g).textContent = h[2][0];
      } else {
        el("ellipse", { cx: h[3], cy: h[4], rx: 40, ry: 16, "class": "shape" }, g);
        el("text", { x: h[3], y: h[4] + 4, "class": "hublabel", "text-anchor": "middle" }, g).textContent = h[2][0];
      }
      title(g, h[2].join("\n"));
      g.addEventListener("click", function (ev) { ev.stopPropagation(); onHub(i); });
      hubEls.push(g);
    });
  }
  function drawNodes(layer) {
    var labels = nNodes <= 300;
    D.nodes.forEach(function (n, i) {
      var g = el("g", { "class": "node" + (n[2] ? " gateway" : ""), "data-i": i, id: "node-" + i }, layer);
      el("circle", { cx: n[3], cy: n[4], r: nNodes > 300 ? D.box[2] / 500 : 16 }, g);
      if (labels) el("text", { x: n[3] + 14, y: n[4] - 18, "text-anchor": "start" }, g).textContent = n[0];
      title(g, n[0] + " " + n[1]);
      g.addEventListener("click", function (ev) { ev.stopPropagation(); onNode(i); });
      nodeEls.push(g);
    });
  }
  function drawGroups() {
    var G = D.groups, at = {};
    var layer = el("g", {}, svg);
    var r = Math.min(G.box[2] / 60, Math.PI * (G.box[2] - 160) / (3 * G.vertices.length));
    G.vertices.forEach(function (v) { at[v[0]] = v; });
    G.links.forEach(function (l) {
      var a = at[l[0]], b = at[l[1]];
      var ln = el("line", { x1: a[2], y1: a[3], x2: b[2], y2: b[3], "class": "grouplink" }, layer);
      title(ln, "group " + l[0] + " \u2013 group " + l[1] + ": " + l[2] + " links");
    });
    G.vertices.forEach(function (v) {
      var g = el("g", { "class": "group", "data-group": v[0] }, layer);
      el("circle", { cx: v[2], cy: v[3], r: r }, g);
      el("text", { x: v[2], y: v[3] - 1.3 * r, "text-anchor": "middle", "font-size": r }, g).textContent = "g" + v[0];
      title(g, "group " + v[0] + ": " + v[1] + " nodes");
      g.addEventListener("click", function () {
        var box = document.getElementById("info"); clear(box);
        html("h2", "group " + v[0], box);
        html("p", v[1] + " nodes; links to " + G.links.filter(function (l) {
          return l[0] === v[0] || l[1] === v[0]; }).length + " other groups", box);
      });
    });
  }
  function vname(v) { return v < nNodes ? D.nodes[v][0] : D.hubs[v - nNodes][0].replace(/^(seg|sw):/, ""); }

  /* --- selection and paths --- */
  function classAll(list, cls, on) { list.forEach(function (g) { g.classList.toggle(cls, on); }); }
  function showInfo(i) {
    var box = document.getElementById("info"), n = D.nodes[i];
    clear(box);
    html("h2", n[0], box);
    html("p", n[1].split(" ").map(function (a) {
      return (families.length > 1 && a.indexOf(":") >= 0 ? "IPv6 address " : "address ") + a;
    }).join(", ") + ", forwarding " + (n[2] ? "on" : "off"), box, "addresses");
    var info = D.info && D.info[n[0]];
    if (!info) { html("p", "details not embedded at this size: beonet routes --node NAME", box); return; }
    var t = html("table", null, box, "ifaces"), hr = html("tr", null, t), dual = families.length > 1;
    ["NIC", "logical", "kind", "segment"].concat(dual ? ["IPv4", "IPv6"] : ["addresses"], ["members"])
      .forEach(function (c) { html("th", c, hr); });
    info.interfaces.forEach(function (r) {
      var tr = html("tr", null, t);
      var cells = dual ? r.slice(0, 4).concat(byFamily(r[4]), r.slice(5)) : r;
      cells.forEach(function (c, k) { html("td", c, tr, k >= 4 && k < cells.length - 1 ? "addr" : null); });
    });
    showRoutes(box, i);
    html("h3", "dry run: links, addresses, forwarding, routes" + (dual ? " (IPv4, then IPv6: ip -6)" : ""), box);
    html("pre", info.dryrun, box, "dryrun");
  }
  /* The node's proven route table (D.routing, longest prefix first), one column per
     family: each prefix in IPv4 and its IPv6 counterpart, and the next hops' nodes. */
  function showRoutes(box, i) {
    html("h3", "proven routes: prefix" + (families.length > 1 ? " in each family" : "") + ", next hops", box);
    var t = html("table", null, box, "routes"), hr = html("tr", null, t);
    families.forEach(function (family) { html("th", familyName(family), hr); });
    html("th", "next hops", hr);
    R.tables[i][1].forEach(function (row) {
      var tr = html("tr", null, t);
      families.forEach(function (family) { html("td", prefixText(row[0], family), tr); });
      var hops = html("td", row[1] < 0 ? "on-link" : null, tr);
      if (row[1] >= 0) [row[1]].concat(row.slice(3)).forEach(function (v) { html("div", D.nodes[v][0], hops); });
    });
  }
  function prefixText(k, family) {
    var p = R.prefixes[k];
    return family === 6 ? R.prefixes6[k] : ipText(p[1], 4) + "/" + p[0];
  }
  /* A dual-stack interface's addresses: [its IPv4 ones, its IPv6 ones]. */
  function byFamily(text) {
    var all = text ? text.split(" ") : [];
    return [all.filter(function (a) { return a.indexOf(":") < 0; }).join(" "),
            all.filter(function (a) { return a.indexOf(":") >= 0; }).join(" ")];
  }
  /* --- the proven paths: the page walks each node's route table (D.routing) as the
     compiler's proof does for `beonet paths`: longest-prefix match at every hop, every
     equal-cost branch, the preferred (first) next hop first; each hop's address is the
     one its reply to the sender comes from. Bounded: D.routing.branches hop lists,
     D.routing.steps steps, a walk longer than the node count is a loop. --- */
  var R = D.routing, tables = [];
  function table(i) {
    if (tables[i]) return tables[i];
    var t = { lens: [], by: {} };
    R.tables[i][1].forEach(function (row) {
      var p = R.prefixes[row[0]];
      if (!t.by[p[0]]) { t.by[p[0]] = {}; t.lens.push(p[0]); }
      if (!Object.prototype.hasOwnProperty.call(t.by[p[0]], p[1])) t.by[p[0]][p[1]] = row;
    });
    t.lens.sort(function (x, y) { return y - x; });
    tables[i] = t;
    return t;
  }
  function lookup(i, addr) {
    var t = table(i);
    for (var k = 0; k < t.lens.length; k++) {
      var len = t.lens[k], net = len ? (addr & (0xffffffff << (32 - len))) >>> 0 : 0;
      var row = t.by[len][net];
      if (row) return row;
    }
    return null;
  }
  function source(i, row) { return R.tables[i][0][row[2]]; }
  /* An address of the walk in a family: IPv4 as is, IPv6 its counterpart (R.six; on an
     IPv6-only plan the IPv4 addresses are internal labels); -1: no reply ("*"). */
  function ipText(a, family) {
    if (a < 0) return "*";
    return family === 6 ? R.six[a] : [a >>> 24, (a >>> 16) & 255, (a >>> 8) & 255, a & 255].join(".");
  }
  /* { branches: [[addresses, nodes]...] or null (no route, or a loop), cut: why a bound cut it };
     the addresses are the walk's (IPv4, or labels), -1 where a hop has no route back */
  function walk(src, dst) {
    var target = R.address[dst], first = lookup(src, target);
    if (!first) return { branches: null, cut: "" };
    var sender = source(src, first), out = [], seen = {}, todo = [[src, [], []]], steps = 0;
    while (todo.length && out.length < R.branches) {
      if (++steps > R.steps) return { branches: out, cut: "the walk stopped after " + R.steps + " steps" };
      var item = todo.pop(), cur = item[0];
      var entry = cur !== dst ? lookup(cur, target) : null;
      if (cur === dst || (entry && entry[1] === -1)) {
        var addrs = item[1].concat([target]), via = item[2].concat([dst]), key = addrs.join(" ") + "|" + via.join(" ");
        if (!seen[key]) { seen[key] = true; out.push([addrs, via]); }
        continue;
      }
      if (!entry) return { branches: null, cut: "" };
      if (item[1].length > nNodes) return { branches: null, cut: "the walk loops (more than " + nNodes + " hops)" };
      var next = [entry[1]].concat(entry.slice(3));
      for (var k = next.length - 1; k >= 0; k--) {
        var nxt = next[k];
        if (nxt < 0) return { branches: null, cut: "" };
        if (nxt === dst) { todo.push([dst, item[1], item[2]]); continue; }
        var back = lookup(nxt, sender);
        todo.push([nxt, item[1].concat([back ? source(nxt, back) : -1]), item[2].concat([nxt])]);
      }
    }
    return { branches: out, cut: todo.length ? "at most " + R.branches + " branches are listed" : "" };
  }
  /* The drawn edges of one IP hop: the shortest way from vertex a to vertex b whose
     inner vertices are hubs (segments, switches). */
  var hopAdj = null;
  function edgesAlong(vertices) {
    var out = [];
    for (var k = 1; k < vertices.length; k++) out.push(edgeOf[vertices[k - 1] + ">" + vertices[k]]);
    return out;
  }
  function throughHubs(a, b) {
    if (!hopAdj) hopAdj = adjacency({});
    return edgesAlong(shortest(hopAdj, a, b, function (w) { return w >= nNodes; }) || []);
  }
  function hopEdges(src, via) {
    var out = [], u = src;
    via.forEach(function (v) { out = out.concat(throughHubs(u, v)); u = v; });
    return out;
  }
  function familyName(family) { return family === 6 ? "IPv6" : "IPv4"; }
  function showPath(a, b) {
    var box = document.getElementById("path");
    clear(box);
    classAll(edgeEls, "onpath", false); classAll(nodeEls, "onpath", false); classAll(hubEls, "onpath", false);
    classAll(nodeEls, "from", false); classAll(nodeEls, "to", false);
    clear(pathLayer);
    if (a < 0) return;
    nodeEls[a].classList.add("from");
    if (b < 0) { html("p", "from " + D.nodes[a][0] + ": pick a second node", box); return; }
    nodeEls[b].classList.add("to");
    html("h2", D.nodes[a][0] + " \u2192 " + D.nodes[b][0], box, "pathtitle");
    var found = walk(a, b), branches = found.branches;
    if (!branches || !branches.length) {
      html("p", "no path: " + (found.cut || "the nodes cannot reach each other"), box);
      return;
    }
    if (families.length > 1) html("p", familyName(state.family) + " hops", box, "family");
    branches.forEach(function (br, k) { showBranch(box, a, br, k); });
    var paths = "beonet paths --from " + D.nodes[a][0] + " --to " + D.nodes[b][0];
    if (found.cut) html("p", "cut short: " + found.cut + " (" + paths + ")", box, "cut");
    var flag = state.family === 6 ? " -6 " : " ";
    html("p", "traceroute -n" + flag + ipText(R.address[b], state.family) + " from " + D.nodes[a][0]
         + " expects the hops of one branch, in order", box, "note");
    html("h3", "expected traceroute -n lines, " + families.map(familyName).join(" and ") + " (" + paths + ")", box);
    html("pre", pathLines(a, b, branches).join("\n"), box, "lines");
  }
  /* One branch in the family shown: its hops listed and drawn. */
  function showBranch(box, a, br, k) {
    html("h3", "branch " + (k + 1) + (k === 0 ? " (preferred)" : ""), box);
    var ol = html("ol", null, box, "hops");
    ol.setAttribute("data-family", state.family);
    br[0].forEach(function (label, h) {
      var li = html("li", null, ol, "hop"), addr = ipText(label, state.family);
      li.textContent = (h + 1) + "  " + addr + "  (" + D.nodes[br[1][h]][0] + ")";
      li.setAttribute("data-node", D.nodes[br[1][h]][0]);
      li.setAttribute("data-address", addr);
    });
    var edges = hopEdges(a, br[1]);
    ol.setAttribute("data-edges", edges.join(" "));
    edges.forEach(function (e) { edgeEls[e].classList.add("onpath"); });
    along(edges);
    br[1].forEach(function (v) { nodeEls[v].classList.add("onpath"); });
  }
  /* The pair's lines as `beonet paths` prints them: every branch in each family, IPv6 marked -6. */
  function pathLines(a, b, branches) {
    var out = [];
    families.forEach(function (family) {
      branches.forEach(function (br) {
        var n = br[0].length;
        out.push(D.nodes[a][0] + " -> " + D.nodes[b][0] + (family === 6 ? " -6" : "") + " (" + n + " hop"
                 + (n === 1 ? "" : "s") + "): " + br[0].map(function (x) { return ipText(x, family); }).join(" "));
      });
    });
    return out;
  }
  /* Two edges of a path meeting on a bus: the stretch of the bus between their feet. */
  function along(edges) {
    for (var k = 1; k < edges.length; k++) {
      var e = D.edges[edges[k - 1]], f = D.edges[edges[k]];
      if (e[2] === f[2] && e[2] >= nNodes) {
        el("line", { x1: e[5], y1: e[6], x2: f[5], y2: f[6], "class": "alongbar" }, pathLayer);
      }
    }
  }
  function onNode(i) {
    if (state.failMode) { fail({ kind: "node", v: i, el: D.nodes[i][6] }); return; }
    showInfo(i);
    if (state.a < 0 || state.b >= 0) { state.a = i; state.b = -1; }
    else if (i !== state.a) { state.b = i; }
    showPath(state.a, state.b);
    if (state.b >= 0) setHash(state.a, state.b);
  }
  function onEdge(i) { if (state.failMode) fail({ kind: "edge", e: i, el: D.edges[i][9] }); }
  function onHub(i) {
    if (state.failMode) { fail({ kind: "hub", v: nNodes + i, el: D.hubs[i][7] }); return; }
    var box = document.getElementById("info"); clear(box);
    html("h2", vname(nNodes + i), box);
    D.hubs[i][2].forEach(function (l) { html("p", l, box); });
  }
  function setHash(a, b) {
    var h = "#from=" + encodeURIComponent(D.nodes[a][0]) + "&to=" + encodeURIComponent(D.nodes[b][0])
            + (state.family === 6 ? "&family=6" : "");
    if (location.hash !== h) history.replaceState(null, "", h);
  }
  function fromHash() {
    var q = {}, byName = {};
    if (!nodeEls.length) return;
    location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
      var p = kv.split("=");
      if (p.length === 2) { try { q[p[0]] = decodeURIComponent(p[1]); } catch (err) { q[p[0]] = ""; } }
    });
    D.nodes.forEach(function (n, i) { byName[n[0]] = i; });
    setFamily(q.family === "6" || q.family === "4" ? Number(q.family) : families[0]);
    if (q.from !== undefined && Object.prototype.hasOwnProperty.call(byName, q.from)) {
      state.a = byName[q.from];
      state.b = (q.to !== undefined && Object.prototype.hasOwnProperty.call(byName, q.to)) ? byName[q.to] : -1;
      showInfo(state.a);
      showPath(state.a, state.b);
    }
  }

  /* The family whose hops #path lists (one the plan has, else its first); the switch follows. */
  function setFamily(family) {
    state.family = families.indexOf(family) >= 0 ? family : families[0];
    var radio = document.getElementById("family" + state.family);
    if (radio) radio.checked = true;
  }
  /* A dual-stack page's switch between the families' hops. */
  function familySwitch() {
    if (families.length < 2) return;
    var span = html("span", null, document.getElementById("bar"));
    span.id = "families";
    html("span", "; paths in ", span);
    families.forEach(function (family) {
      var label = html("label", null, span), input = html("input", null, label);
      input.type = "radio"; input.name = "family"; input.id = "family" + family; input.value = family;
      input.checked = family === state.family;
      label.appendChild(document.createTextNode(" " + familyName(family) + " "));
      input.addEventListener("change", function () {
        setFamily(family);
        if (state.a >= 0) showPath(state.a, state.b);
        if (state.a >= 0 && state.b >= 0) setHash(state.a, state.b);
      });
    });
  }

  /* --- failures: the compiler's counts; the pieces by a search of the drawing --- */
  function adjacency(f) {
    var adj = [], total = nNodes + D.hubs.length;
    for (var v = 0; v < total; v++) adj.push([]);
    D.edges.forEach(function (e, i) {
      if (f.kind === "edge" && f.e === i) return;
      if (f.v === e[1] || f.v === e[2]) return;
      adj[e[1]].push(e[2]); adj[e[2]].push(e[1]);
    });
    return adj;
  }
  function pieces(adj, skip) {
    var comp = [], seen = {};
    for (var s = 0; s < nNodes; s++) {
      if (s === skip || seen[s]) continue;
      var part = [], queue = [s]; seen[s] = true;
      while (queue.length) {
        var v = queue.shift();
        if (v < nNodes) part.push(v);
        adj[v].forEach(function (w) { if (!seen[w] && w !== skip) { seen[w] = true; queue.push(w); } });
      }
      comp.push(part);
    }
    return comp.sort(function (x, y) { return y.length - x.length; });
  }
  /* The shortest way from vertex a to vertex b (its vertices), its inner vertices
     those `inner` allows (all when not given); null when there is none. */
  function shortest(adj, a, b, inner) {
    var prev = {}, queue = [a];
    prev[a] = a;
    for (var q = 0; q < queue.length && prev[b] === undefined; q++) {
      adj[queue[q]].forEach(function (w) {
        if (prev[w] === undefined && (w === b || !inner || inner(w))) { prev[w] = queue[q]; queue.push(w); }
      });
    }
    if (prev[b] === undefined) return null;
    var out = [b];
    while (out[0] !== a) out.unshift(prev[out[0]]);
    return out;
  }
  function fail(f) {
    var box = document.getElementById("failure"), F = D.failures;
    clear(box);
    classAll(nodeEls, "cut", false); classAll(edgeEls, "failed", false); classAll(edgeEls, "reroute", false);
    classAll(nodeEls, "failed", false); classAll(hubEls, "failed", false);
    if (f.kind === "edge") edgeEls[f.e].classList.add("failed");
    else if (f.v < nNodes) nodeEls[f.v].classList.add("failed");
    else hubEls[f.v - nNodes].classList.add("failed");
    var name = f.el >= 0 ? F.names[f.el] : (f.kind === "edge" ? vname(D.edges[f.e][1]) + " \u2013 "
               + vname(D.edges[f.e][2]) : vname(f.v));
    html("h2", "failed: " + name, box);
    var adj = adjacency(f), comp = pieces(adj, f.v === undefined ? -1 : f.v);
    var cutPairs = 0, rest = 0;
    comp.forEach(function (p) { cutPairs += rest * p.length; rest += p.length; });
    if (f.el >= 0) {
      html("p", "pairs cut, routing daemon (converged): " + F.routed[f.el], box, "routed");
      html("p", "pairs cut, the plan's static routes: " + (F.static ? F.static[f.el] : "not computed at this size ("
           + "beonet metrics --resilience)"), box, "static");
    }
    html("p", "pairs the drawing falls apart into: " + cutPairs, box, "drawn");
    comp.slice(1).forEach(function (p) { p.forEach(function (v) { nodeEls[v].classList.add("cut"); }); });
    if (comp.length > 1) html("p", "cut off: " + comp.slice(1).map(function (p) {
      return p.map(function (v) { return D.nodes[v][0]; }).join(" "); }).join("; "), box);
    if (D.engine === "frr" && state.a >= 0 && state.b >= 0) {
      var r = shortest(adj, state.a, state.b);
      html("p", r ? "OSPF's reroute " + D.nodes[state.a][0] + " \u2192 " + D.nodes[state.b][0] + ": "
           + r.filter(function (v) { return v < nNodes; }).map(function (v) { return D.nodes[v][0]; }).join(" ")
           : "no reroute: the pair is cut", box, "reroute");
      if (r) edgesAlong(r).forEach(function (e) { edgeEls[e].classList.add("reroute"); });
    }
  }

  /* --- overlays --- */
  /* Each measured pair's rate added to every drawn edge of its preferred path: edge -> MB/s. */
  function loads(pairs) {
    var through = {};
    pairs.forEach(function (p) {
      var branches = walk(p[0], p[1]).branches;
      if (branches && branches.length) hopEdges(p[0], branches[0][1]).forEach(function (e) {
        through[e] = (through[e] || 0) + p[2];
      });
    });
    return through;
  }
  function overlays() {
    var box = document.getElementById("overlays"), O = D.overlays || {}, byName = {};
    D.nodes.forEach(function (n, i) { byName[n[0]] = i; });
    function mark(name, cls) { if (Object.prototype.hasOwnProperty.call(byName, name)) nodeEls[byName[name]].classList.add(cls); }
    if (O.verify) {
      var v = html("section", null, box, "verify");
      html("h2", "verify: " + O.verify.file, v);
      html("p", O.verify.summary, v);
      var ul = html("ul", null, v);
      O.verify.dead.forEach(function (n) { mark(n, "dead"); html("li", "dead: " + n, ul, "dead"); });
      O.verify.mismatches.forEach(function (m) {
        mark(m[0], "mismatch"); mark(m[1], "mismatch");
        html("li", "mismatch " + m[0] + " \u2192 " + m[1] + ": " + m[2], ul, "mismatch");
      });
      O.verify.problems.forEach(function (p) { html("li", p, ul, "problem"); });
    }
    if (O.cabling) {
      var c = html("section", null, box, "cabling");
      html("h2", "cabling: " + O.cabling.file, c);
      var cl = html("ul", null, c);
      if (!O.cabling.faults.length) html("li", "every cable as planned", cl);
      O.cabling.faults.forEach(function (f) {
        f[2].forEach(function (n) { mark(n, "miswired"); });
        html("li", f[0] + (f[1] ? ": " + f[1] : ""), cl, "fault");
      });
    }
    if (O.load) {
      var l = html("section", null, box, "load");
      html("h2", "load per link: " + O.load.file, l);
      var through = loads(O.load.pairs), most = 0;
      Object.keys(through).forEach(function (e) { most = Math.max(most, through[e]); });
      var ll = html("ul", null, l);
      Object.keys(through).forEach(function (e) {
        var g = edgeEls[e], mb = Math.round(10 * through[e]) / 10;
        g.classList.add("loaded");
        g.setAttribute("data-load", mb);
        g.querySelector(".line").setAttribute("stroke-width", 2 + 10 * through[e] / (most || 1));
        title(g, mb + " MB/s");
      });
      O.load.rows.forEach(function (r) { html("li", r, ll); });
    }
  }

  function drawNodeLevel() {
    clear(svg);
    nodeEls = []; hubEls = []; edgeEls = [];
    view = D.box.slice(); setView();
    var edges = el("g", { "class": "edges" }, svg), hubs = el("g", { "class": "hubs" }, svg);
    pathLayer = el("g", { "class": "pathlayer" }, svg);
    drawEdges(edges); drawHubs(hubs); drawNodes(el("g", { "class": "nodes" }, svg));
    overlays();
    var unfold = document.getElementById("unfold");
    if (unfold) unfold.parentNode.removeChild(unfold);
  }
  function start() {
    document.getElementById("title").textContent = D.title;
    setView();
    if (D.level === "groups" || D.groups) {
      drawGroups();
      html("p", D.count + " nodes: the group-level view (each group one circle, its links to each other "
           + "group one line)", document.getElementById("info"));
    }
    if (D.level === "groups") { document.body.setAttribute("data-ready", "1"); return; }
    if (D.groups) {
      var b = html("button", "unfold: every node", document.getElementById("bar"));
      b.id = "unfold";
      b.addEventListener("click", function () { drawNodeLevel(); fromHash(); });
      if (/from=/.test(location.hash)) drawNodeLevel();
    } else {
      drawNodeLevel();
    }
    familySwitch();
    document.getElementById("failmode").addEventListener("change", function (ev) {
      state.failMode = ev.target.checked;
    });
    fromHash();
    window.addEventListener("hashchange", function () {
      if (!nodeEls.length) drawNodeLevel();
      fromHash();
    });
    document.body.setAttribute("data-ready", "1");
  }
  start();
}());
