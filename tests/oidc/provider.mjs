// A real OpenID provider for the OIDC tests (tests/test_oidc*.py): panva's `oidc-provider`, unmodified, on
// loopback. Usage: node provider.mjs CONFIG.json  — prints one JSON line {"issuer", "other_issuer"} once both
// listen, then serves until killed.
//
// Two issuers in this one process, sharing one freshly generated RSA signing key: the class's provider (ID tokens
// carry the e-mail and groups claims) and "the other issuer" (a second provider, thin ID tokens: the claims come
// from its userinfo endpoint). The shared key is what lets a test show that only the `iss` check refuses a token
// the other issuer signed.
//
// What a test drives here instead of a log-in page (no devInteractions):
//   GET /interaction/<uid>          a one-field form that posts the account's login name to:
//   POST /interaction/<uid>/login   login=<account>   finishes the provider's log-in prompt as that account
//   (consent is granted for the requested scopes by loadExistingGrant, as for a first-party client).
// What a test uses to play an attacker on the wire between the provider and the class server (one-shot, the
// provider itself is never changed):
//   POST /__test__/tamper {"mode": "swap", "body": {...}}   the next /token response body is replaced
//   POST /__test__/tamper {"mode": "raw", "body": "..."}    ... replaced by that text, as it is
//   POST /__test__/tamper {"mode": "signature"}             the next /token response's id_token has its signature
//                                                           altered
//   POST /__test__/tamper {"mode": "claim", "claim": C, "value": V}  ... its payload's claim C set to V, the
//                                                           provider's signature kept
//   POST /__test__/clock {"offset_s": N}                    the provider's clock runs N seconds off (0: true)
// and to play the provider's administrator:
//   POST /__test__/account {"login": L, "claims": {...}}    changes a test account's claims (e.g. its groups)
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';

import Provider from 'oidc-provider';

const config = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const realNow = Date.now.bind(Date);
let clockOffsetMs = 0;
Date.now = () => realNow() + clockOffsetMs;

const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: `test-${crypto.randomBytes(4).toString('hex')}`, alg: 'RS256', use: 'sig' };

const accounts = config.accounts; // login name -> {sub, email, email_verified, name, groups}

function clients() {
  const common = {
    grant_types: ['authorization_code'],
    response_types: ['code'],
    redirect_uris: config.redirect_uris,
    post_logout_redirect_uris: config.post_logout_redirect_uris,
  };
  return [
    { ...common, client_id: 'tritonlab', client_secret: config.client_secret, token_endpoint_auth_method: 'client_secret_basic' },
    { ...common, client_id: 'tritonlab-public', token_endpoint_auth_method: 'none' },
    { ...common, client_id: 'other-app', client_secret: config.other_secret, token_endpoint_auth_method: 'client_secret_basic', redirect_uris: [config.other_redirect_uri] },
  ];
}

function makeProvider(issuer, conform) {
  return new Provider(issuer, {
    clients: clients(),
    jwks: { keys: [signingKey] },
    cookies: { keys: [crypto.randomBytes(16).toString('hex')] },
    conformIdTokenClaims: conform,
    pkce: { required: () => true },
    scopes: ['openid', 'email', 'profile', 'groups'],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
    features: {
      devInteractions: { enabled: false },
      claimsParameter: { enabled: true },
      rpInitiatedLogout: { enabled: true },
    },
    ttl: { AccessToken: 600, AuthorizationCode: 600, IdToken: 600, Interaction: 600, Session: 3600, Grant: 3600 },
    interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
    async findAccount(ctx, id) {
      const account = Object.values(accounts).find((a) => a.sub === id);
      if (!account) return undefined;
      return { accountId: id, claims: async () => ({ ...account }) };
    },
    async loadExistingGrant(ctx) {
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
      grant.addOIDCScope([...ctx.oidc.requestParamScopes].join(' '));
      grant.addOIDCClaims([...ctx.oidc.requestParamClaims]);
      await grant.save();
      return grant;
    },
  });
}

let tamper = null; // one-shot: applies to the next token response of whichever issuer answers it

function readBody(req) {
  return new Promise((resolve, reject) => {
    let data = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => { data += chunk; if (data.length > 1e6) req.destroy(); });
    req.on('end', () => resolve(data));
    req.on('error', reject);
  });
}

function b64(obj) { return Buffer.from(JSON.stringify(obj)).toString('base64url'); }

function tampered(body) {
  const now = tamper;
  tamper = null;
  if (now.mode === 'swap') return JSON.stringify(now.body);
  if (now.mode === 'raw') return String(now.body);
  const token = JSON.parse(body);
  const [head, payload, signature] = token.id_token.split('.');
  if (now.mode === 'signature') {
    const sig = Buffer.from(signature, 'base64url');
    sig[sig.length >> 1] ^= 0x01;
    token.id_token = [head, payload, sig.toString('base64url')].join('.');
  } else if (now.mode === 'claim') {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    claims[now.claim] = now.value;
    token.id_token = [head, b64(claims), signature].join('.');
  }
  return JSON.stringify(token);
}

function handler(provider) {
  const callback = provider.callback();
  return async (req, res) => {
    try {
      const url = new URL(req.url, provider.issuer);
      if (req.method === 'POST' && url.pathname === '/__test__/tamper') {
        tamper = JSON.parse(await readBody(req));
        res.writeHead(204).end();
        return;
      }
      if (req.method === 'POST' && url.pathname === '/__test__/account') {
        const { login: name, claims } = JSON.parse(await readBody(req));
        Object.assign(accounts[name], claims);
        res.writeHead(204).end();
        return;
      }
      if (req.method === 'POST' && url.pathname === '/__test__/clock') {
        clockOffsetMs = Number(JSON.parse(await readBody(req)).offset_s || 0) * 1000;
        res.writeHead(204).end();
        return;
      }
      const login = url.pathname.match(/^\/interaction\/([\w-]+)\/login$/);
      if (req.method === 'POST' && login) {
        const name = new URLSearchParams(await readBody(req)).get('login');
        const account = accounts[name];
        if (!account) {
          res.writeHead(400, { 'content-type': 'text/plain' }).end(`no test account ${name}`);
          return;
        }
        await provider.interactionFinished(req, res, { login: { accountId: account.sub } }, { mergeWithLastSubmission: false });
        return;
      }
      if (req.method === 'GET' && url.pathname.startsWith('/interaction/')) {
        const details = await provider.interactionDetails(req, res);
        const action = `/interaction/${encodeURIComponent(details.uid)}/login`;
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(
          `<!doctype html><title>Test provider</title><form method="post" action="${action}">`
          + '<label for="login">Account</label> <input id="login" name="login"> <button id="sign-in">Sign in</button></form>',
        );
        return;
      }
      if (tamper && req.method === 'POST' && url.pathname === '/token') {
        const end = res.end.bind(res);
        res.end = (chunk, ...rest) => {
          if (chunk && res.statusCode === 200) {
            const body = tampered(Buffer.isBuffer(chunk) ? chunk.toString('utf8') : String(chunk));
            res.setHeader('content-length', Buffer.byteLength(body));
            return end(body, ...rest);
          }
          return end(chunk, ...rest);
        };
      }
      callback(req, res);
    } catch (err) {
      res.writeHead(500, { 'content-type': 'text/plain' }).end(String(err && err.stack || err));
    }
  };
}

async function listen(conform) {
  const server = http.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${server.address().port}`;
  server.on('request', handler(makeProvider(issuer, conform)));
  return issuer;
}

const issuer = await listen(false);
const otherIssuer = await listen(true);
process.stdout.write(`${JSON.stringify({ issuer, other_issuer: otherIssuer })}\n`);
