{# The lookup pages' script, included into page.html's <script>: the filters ask /models for the table alone; the copy button. #}
const f = document.getElementById('filters'); let asked = 0, wait;
const query = () => new URLSearchParams(new FormData(f)).toString();
let shown = f && query();
async function refresh() {   // the table only, from the server; the address follows, for a link or a reload
  const q = query();
  if (q === shown) return;   // the search box repeats its change on blur, as a result is clicked: a new table would swallow the click
  shown = q; const n = ++asked;
  const text = await (await fetch('models?' + q)).text();
  if (n !== asked) return;
  document.getElementById('models').outerHTML = text; history.replaceState(null, '', '?' + q);
}
if (f) {
  f.addEventListener('change', refresh);
  f.addEventListener('submit', e => { e.preventDefault(); refresh(); });
  document.getElementById('search').addEventListener('input', () => { clearTimeout(wait); wait = setTimeout(refresh, 150); });
}
const copy = document.getElementById('copy');
if (copy) copy.addEventListener('click', async () => {
  const code = document.getElementById('run-py').textContent;
  try { await navigator.clipboard.writeText(code); }
  catch (e) { const r = document.createRange(); r.selectNodeContents(document.getElementById('run-py'));
              getSelection().removeAllRanges(); getSelection().addRange(r); document.execCommand('copy'); }
  copy.textContent = 'Copied';
});
