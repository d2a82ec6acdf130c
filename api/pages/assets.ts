// The pages' stylesheet and script, served from /assets with a long cache (the URL carries a
// version). Kept as files of this module so the strict Content-Security-Policy needs no inline code.
export const PAGES_CSS = `
*,*::before,*::after{box-sizing:border-box}
:root{--fg:#1a1f36;--muted:#5b6478;--line:#d8dce6;--bg:#f6f8fb;--card:#fff;--accent:#0a5cd5;--accent-fg:#fff;--bad:#b42318;--bad-bg:#fef3f2;--good:#067647;--good-bg:#ecfdf3;--focus:#ffbf47}
html{-webkit-text-size-adjust:100%}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
a{color:var(--accent)}
a:focus-visible,button:focus-visible,input:focus-visible,select:focus-visible,textarea:focus-visible{outline:3px solid var(--focus);outline-offset:2px}
.top{display:flex;align-items:center;gap:1rem;padding:.75rem 1rem;background:var(--card);border-bottom:1px solid var(--line)}
.top .store{font-weight:600}
.top .back{text-decoration:none}
.wrap{max-width:960px;margin:0 auto;padding:1rem}
.grid{display:grid;gap:1rem}
@media (min-width:760px){.grid{grid-template-columns:1fr 1fr;gap:2rem}.wrap{padding:2rem 1rem}}
.panel{background:var(--card);border:1px solid var(--line);border-radius:12px;padding:1.25rem}
h1{font-size:1.5rem;margin:0 0 .5rem}
h2{font-size:1.1rem;margin:0 0 .75rem}
.muted{color:var(--muted)}
.lines{width:100%;border-collapse:collapse;margin:.75rem 0}
.lines td{padding:.35rem 0;border-bottom:1px solid var(--line)}
.lines td:last-child{text-align:right;white-space:nowrap}
.lines tr.total td{font-weight:700;border-bottom:0;font-size:1.1rem}
.price{font-size:1.75rem;font-weight:700;margin:.25rem 0}
fieldset{border:0;margin:0 0 1rem;padding:0}
legend{font-weight:600;margin-bottom:.5rem;padding:0}
label{display:block;font-size:.9rem;margin:.5rem 0 .25rem}
input[type=text],input[type=email],input[type=tel],select,textarea{width:100%;padding:.65rem .75rem;font:inherit;border:1px solid var(--line);border-radius:8px;background:#fff;color:var(--fg)}
input[readonly]{background:var(--bg)}
textarea{min-height:6rem;font-family:ui-monospace,monospace;font-size:.85rem;word-break:break-all}
.row{display:grid;grid-template-columns:1fr 1fr;gap:.75rem}
.row3{display:grid;grid-template-columns:2fr 1fr 1fr;gap:.75rem}
@media (max-width:420px){.row3{grid-template-columns:1fr 1fr}.row3>:first-child{grid-column:1/-1}}
.choices{display:flex;gap:.5rem;flex-wrap:wrap}
.choice{display:flex;align-items:center;gap:.4rem;border:1px solid var(--line);border-radius:8px;padding:.5rem .85rem;margin:0;cursor:pointer}
.button,button{display:inline-block;width:100%;padding:.85rem 1rem;font:inherit;font-weight:600;border:0;border-radius:8px;background:var(--accent);color:var(--accent-fg);cursor:pointer;text-align:center;text-decoration:none;margin-top:.75rem}
button.secondary,.button.secondary{background:var(--card);color:var(--accent);border:1px solid var(--accent)}
button[disabled]{opacity:.6;cursor:progress}
.alert{border-radius:8px;padding:.75rem 1rem;margin:0 0 1rem;background:var(--bad-bg);color:var(--bad);border:1px solid #fecdca}
.ok{border-radius:8px;padding:.75rem 1rem;margin:0 0 1rem;background:var(--good-bg);color:var(--good);border:1px solid #abefc6}
.hint{font-size:.85rem;color:var(--muted);margin:.25rem 0 0}
.currencies{display:flex;gap:.5rem;flex-wrap:wrap;margin-top:.5rem}
.currencies a,.currencies strong{padding:.25rem .6rem;border:1px solid var(--line);border-radius:999px;text-decoration:none;font-size:.9rem}
.test{margin-top:1rem;border-top:1px dashed var(--line);padding-top:1rem}
.test form{display:inline}
.spinner{display:inline-block;width:1rem;height:1rem;border:2px solid var(--line);border-top-color:var(--accent);border-radius:50%;animation:spin 1s linear infinite;vertical-align:-2px;margin-right:.4rem}
@keyframes spin{to{transform:rotate(360deg)}}
@media (prefers-reduced-motion:reduce){.spinner{animation:none}}
.center{text-align:center}
.list{list-style:none;margin:0;padding:0}
.list>li{border-bottom:1px solid var(--line);padding:.75rem 0}
.list>li:last-child{border-bottom:0}
.badge{display:inline-block;font-size:.8rem;padding:.1rem .5rem;border-radius:999px;background:var(--bg);border:1px solid var(--line)}
.inline{display:flex;gap:.5rem;flex-wrap:wrap;align-items:end}
.inline button{width:auto}
.visually-hidden{position:absolute!important;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
[hidden]{display:none!important}
`;

export const PAGES_JS = `
(function () {
  'use strict';
  // PIX and review pages: poll the small status document, reload when the session moves.
  var poll = document.querySelector('[data-poll]');
  if (poll) {
    var url = poll.getAttribute('data-poll');
    var current = poll.getAttribute('data-state');
    var tick = function () {
      fetch(url, { cache: 'no-store', headers: { accept: 'application/json' } })
        .then(function (r) { return r.json(); })
        .then(function (s) {
          if (s.status + '/' + s.payment_status !== current) { window.location.replace(s.next); return; }
          setTimeout(tick, 2000);
        })
        .catch(function () { setTimeout(tick, 4000); });
    };
    setTimeout(tick, 2000);
  }
  // Copy the PIX code.
  Array.prototype.forEach.call(document.querySelectorAll('[data-copy]'), function (button) {
    button.hidden = false;
    button.addEventListener('click', function () {
      var field = document.getElementById(button.getAttribute('data-copy'));
      field.select();
      var done = function () { button.textContent = button.getAttribute('data-copied'); };
      if (navigator.clipboard) navigator.clipboard.writeText(field.value).then(done, done);
      else { document.execCommand('copy'); done(); }
    });
  });
  // Card or PIX: show the chosen method's fields only.
  var methods = document.querySelectorAll('input[name=method_choice]');
  var sync = function () {
    var chosen = document.querySelector('input[name=method_choice]:checked');
    Array.prototype.forEach.call(document.querySelectorAll('[data-method]'), function (block) {
      var off = !chosen || block.getAttribute('data-method') !== chosen.value;
      block.hidden = off;
      Array.prototype.forEach.call(block.querySelectorAll('input,select'), function (input) {
        input.disabled = off;
        if (input.hasAttribute('data-required')) input.required = !off;
      });
    });
  };
  Array.prototype.forEach.call(methods, function (radio) { radio.addEventListener('change', sync); });
  if (methods.length) sync();
  // Stripe's card field (a Stripe connection): the card becomes a pm_ id in Stripe.js; only that id is posted.
  var stripeCard = document.querySelector('[data-stripe-card]');
  var stripeOf = function (holder) {
    var account = holder.getAttribute('data-stripe-account');
    return window.Stripe(holder.getAttribute('data-stripe-key'), account ? { stripeAccount: account } : undefined);
  };
  if (stripeCard) {
    var cardError = document.getElementById('card-error');
    var showCardError = function (text) { cardError.textContent = text; cardError.hidden = false; };
    if (!window.Stripe) showCardError(cardError.getAttribute('data-unavailable'));
    else {
      var stripe = stripeOf(stripeCard);
      var cardElement = stripe.elements().create('card');
      cardElement.mount('#card-element');
      var cardForm = stripeCard.closest('form');
      var methodField = cardForm.querySelector('input[name=payment_method]');
      cardForm.addEventListener('submit', function (event) {
        if (!event.submitter || event.submitter.value !== 'card' || methodField.value) return;
        event.preventDefault();
        event.stopImmediatePropagation();
        var field = function (name) { var input = cardForm.querySelector('[name=' + name + ']'); return input ? input.value : undefined; };
        var details = { name: field('name'), email: field('email') };
        Promise.resolve(stripe.createPaymentMethod({ type: 'card', card: cardElement, billing_details: details })).then(function (result) {
          if (!result || result.error || !result.paymentMethod) { showCardError((result && result.error && result.error.message) || cardError.getAttribute('data-unavailable')); return; }
          methodField.value = result.paymentMethod.id;
          var chosen = document.createElement('input');
          chosen.type = 'hidden'; chosen.name = 'method'; chosen.value = 'card';
          cardForm.appendChild(chosen);
          cardForm.submit();
        }, function (error) { showCardError(String(error && error.message || error)); });
      });
    }
  }
  // The portal's card change (a Stripe connection): each subscription's form has its own field; only the pm_ id is posted.
  Array.prototype.forEach.call(document.querySelectorAll('[data-stripe-portal-card]'), function (holder) {
    var errorLine = holder.querySelector('[data-card-error]');
    var showError = function (text) { errorLine.textContent = text; errorLine.hidden = false; };
    if (!window.Stripe) { showError(errorLine.getAttribute('data-unavailable')); return; }
    var portalStripe = stripeOf(holder);
    var element = portalStripe.elements().create('card');
    element.mount(holder.querySelector('[data-card-element]'));
    var form = holder.closest('form');
    var methodInput = form.querySelector('input[name=payment_method]');
    form.addEventListener('submit', function (event) {
      if (methodInput.value) return;
      event.preventDefault();
      event.stopImmediatePropagation();
      Promise.resolve(portalStripe.createPaymentMethod({ type: 'card', card: element })).then(function (result) {
        if (!result || result.error || !result.paymentMethod) { showError((result && result.error && result.error.message) || errorLine.getAttribute('data-unavailable')); return; }
        methodInput.value = result.paymentMethod.id;
        form.submit();
      }, function (error) { showError(String(error && error.message || error)); });
    });
  });
  // 3-D Secure: Stripe.js runs the bank's step, then the server is asked to check at once (the event may come later).
  var nextAction = document.querySelector('[data-stripe-action]');
  // Without a client secret yet, the button posts the confirm as it is (the server reads the secret once).
  var actionSecret = nextAction && nextAction.getAttribute('data-client-secret');
  if (nextAction && actionSecret && window.Stripe) {
    var actionStripe = stripeOf(nextAction);
    var confirmed = document.getElementById('stripe-confirmed');
    var runAction = function () {
      var step = actionStripe.handleNextAction ? actionStripe.handleNextAction({ clientSecret: actionSecret }) : actionStripe.confirmCardPayment(actionSecret);
      return Promise.resolve(step).then(function () { confirmed.submit(); }, function () { confirmed.submit(); });
    };
    confirmed.addEventListener('submit', function (event) { event.preventDefault(); runAction(); });
    runAction();
  }
  // A renewal the bank asked the buyer to confirm (portal): Stripe.js confirms that intent with the saved card
  // (3-D Secure in the page), then the form asks our server to check; whatever the bank said, the server reads it.
  var renewal = document.querySelector('[data-stripe-renewal]');
  var renewalForm = document.getElementById('renewal-confirmed');
  if (renewal && renewalForm && window.Stripe) {
    var renewalStripe = stripeOf(renewal);
    renewalForm.addEventListener('submit', function (event) {
      event.preventDefault();
      var secret = renewal.getAttribute('data-client-secret');
      var method = renewal.getAttribute('data-payment-method');
      var done = function () { renewalForm.submit(); };
      Promise.resolve(renewalStripe.confirmCardPayment(secret, { payment_method: method })).then(done, done);
    });
  }
  // One submission at a time.
  Array.prototype.forEach.call(document.querySelectorAll('form[data-once]'), function (form) {
    form.addEventListener('submit', function () {
      // After the form data is taken: a disabled submitter would drop its name=value (the method).
      setTimeout(function () {
        Array.prototype.forEach.call(form.querySelectorAll('button[type=submit]'), function (b) { b.disabled = true; });
      }, 0);
      form.setAttribute('aria-busy', 'true');
    });
  });
  // Thank-you page: count down to the redirect the meta refresh performs.
  var countdown = document.querySelector('[data-countdown]');
  if (countdown) {
    var left = Number(countdown.getAttribute('data-countdown'));
    var timer = setInterval(function () {
      left -= 1;
      if (left <= 0) { clearInterval(timer); return; }
      countdown.textContent = String(left);
    }, 1000);
  }
})();
`;
