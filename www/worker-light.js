// The light worker (src/web/worker, `start_light`): the page's own module
// started in a module worker. The page's wasm holds both the page and the
// light worker, so opening the page fetches one module, not two; its
// `main` starts the worker when it runs in one. The page passes its
// module's address (`?js=`), which must be on this origin; Trunk names its
// wasm after it (`NAME.js`, `NAME_bg.wasm`).
const here = new URL(self.location.href);
const js = new URL(here.searchParams.get('js') ?? '', here);
if (js.origin !== here.origin || !js.pathname.endsWith('.js')) {
  throw new Error(`the light worker loads the page's module from this origin only, not ${js.href}`);
}
const wasm = new URL(js);
wasm.pathname = wasm.pathname.replace(/\.js$/, '_bg.wasm');
wasm.search = '';
const { default: init } = await import(js.href);
await init({ module_or_path: wasm.href });
