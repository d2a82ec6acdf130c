// The one shape every language's words take (DESIGN.md, rooms: i18n/): the hosted pages' words and the
// buyer e-mails' words, each a closed list of keys, so a language missing a word (or carrying one no page
// uses) fails `tsc` and no page or e-mail falls back to English word by word.

/** The words of the hosted checkout, the offer-link pages and (from `portal_title` on) the customer portal. */
export const PAGE_KEYS = [
  'secure_checkout', 'back', 'order_summary', 'pack_of', 'quantity', 'subtotal', 'discount', 'total', 'currency', 'switch_currency',
  'your_details', 'email', 'email_locked', 'name', 'phone', 'document', 'document_type', 'doc_cpf', 'doc_cnpj', 'doc_passport',
  'doc_tax_id', 'payment_method', 'card', 'pix', 'card_number', 'expiry', 'cvc', 'installments', 'installment_option', 'pay',
  'start_trial', 'trial_note', 'generate_pix', 'recurring_note', 'cycle_daily', 'cycle_biweekly', 'cycle_monthly', 'cycle_quarterly',
  'cycle_half_yearly', 'cycle_yearly', 'cycle_custom', 'error_title', 'err_card_declined', 'err_insufficient_funds', 'err_invalid_number',
  'err_provider_unavailable', 'err_payment_in_progress', 'err_card_payments_locked', 'card_locked', 'card_locked_pix',
  'err_provider_timeout', 'confirming_text', 'err_customer_rejected', 'err_declined', 'err_field', 'thank_you', 'paid_text', 'order_ref',
  'subscription_ref', 'redirecting', 'continue', 'your_files', 'open_checkout', 'choose_pack', 'link_busy_title', 'link_busy_text',
  'pending_title', 'review_text', 'pix_title', 'pix_code', 'pix_instructions', 'copy_code', 'copied', 'waiting', 'failed_title',
  'failed_text', 'unavailable_title', 'unavailable_text', 'test_connection', 'settle_paid', 'settle_refused',
  'portal_title', 'signed_in_as', 'sign_out', 'subscriptions', 'orders', 'no_subscriptions', 'no_orders', 'status', 'status_trialing',
  'status_active', 'status_past_due', 'status_paused', 'status_canceled', 'status_expired', 'status_pending', 'status_paid',
  'status_failed', 'status_refunded', 'status_partially_refunded', 'status_charged_back', 'next_billing', 'cancels_on',
  'cancel_at_period_end', 'reactivate', 'card_on_file', 'no_card', 'replace_card', 'save_card', 'done_canceled', 'done_reactivated',
  'done_card', 'action_failed', 'signin_invalid_title', 'signin_invalid_text', 'signin_confirm_title', 'signin_confirm_text',
  'signin_continue', 'portal_unavailable_title', 'portal_unavailable_text', 'signed_out', 'date', 'amount',
] as const;

/** The words of the buyer e-mails: the purchase confirmation and the cancellation e-mail. */
export const EMAIL_KEYS = [
  'payment_subject', 'cancel_subject', 'greeting', 'greeting_named', 'intro_purchase', 'intro_renewal', 'intro_charge', 'intro_usage',
  'intro_cancel', 'product', 'amount', 'period', 'price', 'order', 'subscription', 'one_time', 'range', 'price_per_cycle', 'footer',
  'cycle_daily', 'cycle_biweekly', 'cycle_monthly', 'cycle_quarterly', 'cycle_half_yearly', 'cycle_yearly', 'cycle_custom',
] as const;

export type PageKey = (typeof PAGE_KEYS)[number];
export type EmailKey = (typeof EMAIL_KEYS)[number];

/** A language's words: every page key and every e-mail key, none left out. `{name}` marks a value filled in. */
export interface Dictionary {
  page: Record<PageKey, string>;
  email: Record<EmailKey, string>;
}
