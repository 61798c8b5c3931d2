import type { Transporter } from 'nodemailer';

export interface MailMessage {
  readonly to: string[];
  readonly subject: string;
  readonly text: string;
  readonly html?: string | undefined;
  readonly attachments?: { filename: string; content: string; contentType: string }[] | undefined;
}

/** Sends mail for scripts (`email.send`) over the SMTP server the operator configured. */
export interface Mailer {
  send(message: MailMessage): Promise<{ messageId: string }>;
}

/**
 * SMTP through nodemailer; `IOTBRIDGE_SMTP_URL` (smtp:// or smtps://, credentials in the URL) and
 * `IOTBRIDGE_SMTP_FROM`. nodemailer is loaded at the first message, not at start (~85 ms of it).
 */
export class SmtpMailer implements Mailer {
  readonly #url: string;
  readonly #from: string;
  #transport: Promise<Transporter> | undefined;

  constructor(url: string, from: string) {
    this.#url = url;
    this.#from = from;
  }

  async send(message: MailMessage): Promise<{ messageId: string }> {
    this.#transport ??= import('nodemailer').then(({ default: nodemailer }) => nodemailer.createTransport(this.#url));
    const info = await (await this.#transport).sendMail({ from: this.#from, ...message });
    return { messageId: String(info.messageId) };
  }
}

/** When no SMTP server is configured: every send fails with a clear message. */
export const NO_MAILER: Mailer = {
  send: () => Promise.reject(new Error('email is not configured on this service (IOTBRIDGE_SMTP_URL)')),
};
