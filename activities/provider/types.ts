// The payment provider interface. Real providers plug in behind it; the built-in test connection
// (test-connection.ts) implements DESIGN.md's table of test inputs.

export type RegisterCustomerResult = { ok: true; providerCustomerId: string } | { ok: false; reason: string };

export interface PaymentProvider {
  /** Registers a buyer at the provider; a refusal becomes 400 customer_rejected with its reason. */
  registerCustomer(input: { storeId: string; customerId: string; email: string; name: string | null }): Promise<RegisterCustomerResult>;
}
