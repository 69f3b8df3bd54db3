/** Upstream URLs: parsed once at start-up, and shown only as their origin, since paths and queries carry API keys. */
import { ForwardConfigError } from '../errors.js';

/** Scheme, host and port; anything after is shown as `/…` because paths and queries carry API keys. */
export function upstreamLabel(url: URL): string {
  const more = (url.pathname !== '/' && url.pathname !== '') || url.search !== '';
  return url.protocol + '//' + url.host + (more ? '/…' : '');
}

/** Parses an upstream URL; `where` names it in errors ("lane evm-paid upstream 0") instead of echoing it. */
export function parseUpstreamUrl(raw: string, where: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ForwardConfigError(`${where}: not a valid URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ForwardConfigError(`${where}: scheme must be http or https, not ${url.protocol.replace(':', '')}`);
  }
  return url;
}
