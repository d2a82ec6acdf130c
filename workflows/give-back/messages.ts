// The give-back workflow's id and input, shared by its starters (the provider events endpoint, the test
// connection's notices) and the workflow: one run per late captured transaction.

/** A captured payment whose waiting workflow had ended: given back unless an order here keeps it. */
export interface GiveBackWorkflowInput {
  storeId: string;
  transactionId: string;
  /** Paid through the test connection (a test clock's, or a store on the built-in one): given back there. */
  testObject: boolean;
}

/** What the give-back found and did. */
export type GiveBackOutcome =
  | { status: 'kept'; orderId: string; note: string }
  | {
      status: 'given_back';
      orderId: string | null;
      refund: 'refunded' | 'voided';
      /** With no order: the checkout attempt it was (its buyer is told from the session), and what it took. */
      attempt?: { sessionId: string; n: number; amount: number; currency: string } | null;
    }
  | { status: 'nothing_to_give_back'; orderId: string | null; note: string };

/** `give-back/<store>/<transaction id>`: a transaction is given back at most once, whoever noticed it. */
export const giveBackWorkflowId = (storeId: string, transactionId: string): string => `give-back/${storeId}/${transactionId}`;
