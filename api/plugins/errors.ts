// The one place where every failure becomes the spec's error object: ApiErrors as they are,
// schema validation failures as parameter_missing/parameter_invalid with a dotted param,
// body-parsing failures as parameter_invalid, and anything else as a logged 500 without internals.
import fp from 'fastify-plugin';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../domain/errors';
import { outageOf } from '../outages';

interface AjvError {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
}

/** "/lines/0/amount" -> "lines[0].amount", the spec's notation for nested params. */
export function paramFromPointer(pointer: string, extra?: string): string {
  const parts = pointer
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (extra !== undefined) parts.push(extra);
  let out = '';
  for (const part of parts) {
    if (/^\d+$/.test(part)) out += `[${part}]`;
    else out += out ? `.${part}` : part;
  }
  return out;
}

function fromValidation(errors: AjvError[]): ApiError {
  const err = errors[0];
  switch (err.keyword) {
    case 'required': {
      const param = paramFromPointer(err.instancePath, String(err.params.missingProperty));
      return new ApiError('parameter_missing', `Missing required param: ${param}.`, { param });
    }
    case 'additionalProperties': {
      const param = paramFromPointer(err.instancePath, String(err.params.additionalProperty));
      return new ApiError('parameter_invalid', `Received unknown parameter: ${param}.`, { param });
    }
    default: {
      const param = paramFromPointer(err.instancePath) || null;
      const detail = err.message ?? 'is invalid';
      return new ApiError('parameter_invalid', `Invalid ${param ?? 'request'}: ${detail}.`, { param });
    }
  }
}

export function toApiError(error: FastifyError | Error): ApiError | null {
  if (error instanceof ApiError) return error;
  const e = error as FastifyError & { validation?: AjvError[] };
  if (e.validation && e.validation.length > 0) return fromValidation(e.validation);
  switch (e.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('parameter_invalid', 'Request bodies must be application/json or application/x-www-form-urlencoded.');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('parameter_invalid', 'The request body is not valid JSON.');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('parameter_invalid', 'The request body is too large.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError('parameter_invalid', 'The request body length does not match Content-Length.');
  }
  if (e.statusCode && e.statusCode >= 400 && e.statusCode < 500) {
    return new ApiError('parameter_invalid', e.message);
  }
  return null;
}

export function sendApiError(reply: FastifyReply, error: ApiError, docUrl: string): FastifyReply {
  for (const [name, value] of Object.entries(error.headers)) reply.header(name, value);
  return reply.status(error.status).type('application/json; charset=utf-8').send(error.toBody(docUrl));
}

export default fp(async function errorsPlugin(app: FastifyInstance) {
  const docUrl = `${app.deps.config.docsUrl}#errors`;

  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const apiError = toApiError(error) ?? outageOf(error);
    if (apiError) return sendApiError(reply, apiError, docUrl);
    request.log.error({ err: error, requestId: request.id }, 'unhandled error');
    return sendApiError(
      reply,
      new ApiError('internal_error', `An internal error occurred. Keep the Request-Id ${request.id} and retry.`, {
        status: 500,
        type: 'api_error',
      }),
      docUrl,
    );
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0];
    return sendApiError(reply, new ApiError('resource_missing', `Unrecognized request URL (${request.method}: ${path}).`), docUrl);
  });
});
